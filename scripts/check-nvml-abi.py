#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check-nvml-abi.py: compares src/backend/nvml_abi.h, our own declaration of
the NVML ABI subset, with NVIDIA's nvml.h (not in this repository: NVIDIA's
CUDA toolkit ships it, and NVIDIA/go-nvml keeps a copy at gen/nvml/nvml.h).

  scripts/check-nvml-abi.py path/to/nvml.h [build/nvml-emu/libnvidia-ml.so.1]

Checks, by compiling each side with the C compiler: every struct's size and
every field's offset and size, every NVML_* constant, enum value and struct
version macro nvml_abi.h defines; every prototype nvml_abi.h declares against
NVIDIA's (a conflicting one is a compile error); with the library, that every
function the header declares is exported. Prints the differences, exits 1 if
any. tests/nvml-emu/test-nvml-abi.c holds the numbers this checked.
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OURS = os.path.join(HERE, "..", "src", "backend", "nvml_abi.h")


def probes(text):
    """printf lines for every struct field, constant and enum value of nvml_abi.h."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out = []
    for m in re.finditer(r"typedef struct\s*\w*\s*\{(.*?)\}\s*([\w, ]+);", text, re.S):
        t = m.group(2).split(",")[0].strip()
        out.append('P("sizeof %s", sizeof(%s));' % (t, t))
        for decl in filter(None, (d.strip() for d in m.group(1).split(";"))):
            parts = [p.strip() for p in decl.split(",")]
            for f in [parts[0].split()[-1]] + parts[1:]:
                f = re.sub(r"\[.*", "", f).lstrip("*")
                out.append('P("offsetof %s.%s", offsetof(%s, %s));' % (t, f, t, f))
                out.append('P("sizeof %s.%s", sizeof(((%s *)0)->%s));' % (t, f, t, f))
    for m in re.finditer(r"#define\s+(NVML_\w+|nvml\w+_v\d)\s+\S", text):
        if m.group(1) != "NVML_STRUCT_VERSION":
            out.append('P("%s", %s);' % (m.group(1), m.group(1)))
    for m in re.finditer(r"\b(NVML_[A-Z0-9_]+)\s*=", text):
        out.append('P("%s", %s);' % (m.group(1), m.group(1)))
    return "\n".join(out)


def run(tmp, name, include, body):
    src = os.path.join(tmp, name + ".c")
    with open(src, "w") as f:
        f.write("#include <stdio.h>\n#include <stddef.h>\n#define NVML_NO_UNVERSIONED_FUNC_DEFS\n"
                '#include "%s"\n#define P(a, b) printf("%%s %%llu\\n", a, (unsigned long long)(b))\n'
                "int main(void)\n{\n%s\nreturn 0;\n}\n" % (include, body))
    exe = os.path.join(tmp, name)
    subprocess.run(["cc", "-o", exe, src], check=True)
    return subprocess.run([exe], check=True, capture_output=True, text=True).stdout.splitlines()


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    theirs = os.path.abspath(sys.argv[1])
    ours_text = open(OURS).read()
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        body = probes(ours_text)
        a = run(tmp, "ours", os.path.abspath(OURS), body)
        b = run(tmp, "theirs", theirs, body)
        for x, y in zip(a, b):
            if x != y:
                print("differs: nvml_abi.h %s; nvml.h %s" % (x, y.rsplit(" ", 1)[1]))
                bad += 1
        print("%d sizes, offsets and constants compared" % len(a))
        # Our X-macro lists, expanded into prototypes after NVIDIA's header.
        lists = re.findall(r"(#define GS_NVML_\w*FUNCTIONS\(X\)(?:.*\\\n)*.*\n)", ours_text)
        protos = os.path.join(tmp, "protos.c")
        with open(protos, "w") as f:
            f.write('#define NVML_NO_UNVERSIONED_FUNC_DEFS\n#include "%s"\n%s\n'
                    "#define D(name, params) nvmlReturn_t name params;\n" % (theirs, "".join(lists)))
            for m in re.finditer(r"#define (GS_NVML_\w*FUNCTIONS)\(X\)", ours_text):
                f.write("%s(D)\n" % m.group(1))
        r = subprocess.run(["cc", "-c", "-o", os.devnull, protos], capture_output=True, text=True)
        count = len(re.findall(r"\bX\(nvml", "".join(lists)))
        if r.returncode != 0:
            print(r.stderr)
            bad += 1
        print("%d prototypes compared" % count)
    if len(sys.argv) == 3:
        declared = set(re.findall(r"DECLDIR\s+(nvml\w+)\s*\(", open(theirs).read()))
        nm = subprocess.run(["nm", "-D", "--defined-only", sys.argv[2]], check=True,
                            capture_output=True, text=True).stdout
        exported = {line.split()[-1].split("@")[0] for line in nm.splitlines()}
        for name in sorted(declared - exported):
            print("not exported: %s" % name)
            bad += 1
        print("%d functions of nvml.h, %d exported" % (len(declared), len(declared & exported)))
    print("%d differences" % bad)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
