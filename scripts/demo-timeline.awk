# demo-timeline.awk: the demo's autoscaler chart: reads its CSV
# (seconds,concurrency,slices,p90_ms; -F, -v budget=50) and writes an SVG of
# two panels over time: slices (and the offered concurrency / 4), and the
# window p90 with the budget as a dashed line. bench plot charts against
# concurrency, not time, hence this small file.
NR > 1 && $3 != "" {
  n++; t[n] = $1; c[n] = $2; s[n] = $3; p[n] = $4
  if ($4 == 0 && n > 1) p[n] = p[n - 1] # 0: the window restarted after a scale event
  if ($1 > tmax) tmax = $1
  if ($4 > pmax) pmax = $4
}
function x(v) { return 60 + v / (tmax ? tmax : 1) * 620 }
function line(y0, h, vmax, arr, color, dash,    i, d) {
  d = ""
  for (i = 1; i <= n; i++) d = d sprintf("%s%.1f,%.1f ", i == 1 ? "M" : "L", x(t[i]), y0 + h - arr[i] / vmax * h)
  printf "<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s/>\n", d, color, dash
}
function frame(y0, h, vmax, label,    k, v) {
  printf "<rect x=\"60\" y=\"%d\" width=\"620\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n", y0, h
  printf "<text x=\"10\" y=\"%d\" font-size=\"12\">%s</text>\n", y0 - 6, label
  for (k = 0; k <= 4; k++) {
    v = vmax * k / 4
    printf "<text x=\"55\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%g</text>\n", y0 + h - k * h / 4 + 3, v
  }
}
END {
  if (pmax < budget * 1.5) pmax = budget * 1.5
  for (i = 1; i <= n; i++) { q[i] = c[i] / 4; if (p[i] > pmax) p[i] = pmax }
  print "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"480\" font-family=\"sans-serif\">"
  print "<rect width=\"720\" height=\"480\" fill=\"white\"/>"
  print "<text x=\"360\" y=\"18\" font-size=\"14\" text-anchor=\"middle\">gpuslice autoscaler, p90 budget " budget " ms (EMULATED A100-SXM4-40GB)</text>"
  frame(50, 160, 8, "slices (blue), offered concurrency / 4 (grey)")
  line(50, 160, 8, q, "#999", " stroke-dasharray=\"2,3\"")
  line(50, 160, 8, s, "#1f77b4", "")
  frame(270, 160, pmax, "window p90, ms (red); budget (dashed)")
  printf "<line x1=\"60\" x2=\"680\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"black\" stroke-dasharray=\"6,4\"/>\n", 270 + 160 - budget / pmax * 160, 270 + 160 - budget / pmax * 160
  line(270, 160, pmax, p, "#d62728", "")
  printf "<text x=\"370\" y=\"460\" font-size=\"12\" text-anchor=\"middle\">seconds (0 to %d)</text>\n", tmax
  print "</svg>"
}
