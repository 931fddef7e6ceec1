/* SPDX-License-Identifier: Apache-2.0 */
/* opts.c: a verb's options from its one table (struct cli_opt): the
 * getopt_long table and its parsing, deprecated spellings, --help, the
 * synopsis in usage errors, and the duration syntax every option shares.
 * The man pages and the completion read the same tables (mangen,
 * cmd_complete.c); nothing here knows what a verb does. */
#include "cli/cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPTS 64
#define ROW_BASE 0x10000 /* getopt's value for row k of a verb's table: ROW_BASE + k */

const char cli_exit_text[] =
    "0 done; 1 refused or failed while acting (the GPU, driver or emulator refused, a check did\n"
    "not match, a server or network failed, a command it ran failed); 2 bad command line or a bad\n"
    "input it names (unknown option or value, a file that is missing, unreadable or malformed):\n"
    "nothing was changed; 3 gpuslice's own state is unusable (the emulator's state file, the apply\n"
    "journal, the jobs directory): corrupt, foreign or not writable. `run` exits with its command's\n"
    "status.";

const char cli_duration_text[] =
    "DURATION is a number and a unit: us, ms, s, m or h (250ms, 10s, 1.5m). Where an option took a\n"
    "bare number before, it still does, in the unit it had (its help says which).";

void cli_opt_spelling(const struct cli_opt *o, char *buf, size_t size)
{
  char letter[8] = "    ";
  if (o->letter)
    snprintf(letter, sizeof(letter), "-%c%s", o->letter, o->name ? ", " : "");
  snprintf(buf, size, "%s%s%s%s%s", letter, o->name ? "--" : "", o->name ? o->name : "",
           o->arg ? " " : "", o->arg ? o->arg : "");
}

void cli_verb_words(const struct cli_verb *v, char *buf, size_t size)
{
  snprintf(buf, size, "%s%s%s", v->group ? v->group : "", v->group ? " " : "", v->name);
}

static const struct cli_opt help_row = {"help", 'h', NULL, 'h', NULL, "this help", CLI_VALUE_TEXT,
                                        NULL};

const char *cli_synopsis(const struct cli *c)
{
  static char buf[512];
  char words[64];
  const struct cli_spec *s = c->verb->spec;
  cli_verb_words(c->verb, words, sizeof(words));
  snprintf(buf, sizeof(buf), "gpuslice %s [options]%s%s", words, s && s->operands ? " " : "",
           s && s->operands ? s->operands : "");
  return buf;
}

/* Lines of text, each indented by two spaces. */
static void indented(FILE *out, const char *text)
{
  while (text && *text) {
    size_t n = strcspn(text, "\n");
    fprintf(out, "  %.*s\n", (int)n, text);
    text += n + (text[n] == '\n');
  }
}

void cli_verb_help(const struct cli_verb *v, FILE *out)
{
  struct cli c = {.verb = v};
  const struct cli_spec *s = v->spec;
  const struct cli_opt *rows = s ? s->opts : NULL;
  char sp[96];
  int width = 0;
  fprintf(out, "usage: %s\n\n", cli_synopsis(&c));
  indented(out, v->summary);
  if (s && s->about)
    indented(out, s->about);
  for (unsigned k = 0; rows && (rows[k].name || rows[k].letter); k++) {
    cli_opt_spelling(&rows[k], sp, sizeof(sp));
    if (!rows[k].deprecated && (int)strlen(sp) > width)
      width = (int)strlen(sp);
  }
  width = width < 12 ? 12 : width > 30 ? 30 : width;
  fprintf(out, "\noptions:\n");
  for (unsigned k = 0; rows && (rows[k].name || rows[k].letter); k++) {
    if (rows[k].deprecated)
      continue;
    cli_opt_spelling(&rows[k], sp, sizeof(sp));
    fprintf(out, "  %-*s  %s%s%s%s\n", width, sp, rows[k].help, rows[k].def ? " (default: " : "",
            rows[k].def ? rows[k].def : "", rows[k].def ? ")" : "");
  }
  cli_opt_spelling(&help_row, sp, sizeof(sp));
  fprintf(out, "  %-*s  %s\n", width, sp, help_row.help);
  if (s && s->examples) {
    fprintf(out, "\nexamples:\n");
    indented(out, s->examples);
  }
}

/* The row of a verb's table that `letter` or `name` spells (not a
 * deprecated one when name is given: that is the new spelling's row). */
static const struct cli_opt *row_of(const struct cli_opt *rows, char letter, const char *name)
{
  for (unsigned k = 0; rows && (rows[k].name || rows[k].letter); k++)
    if ((letter && rows[k].letter == letter) ||
        (name && rows[k].name && !rows[k].deprecated && strcmp(rows[k].name, name) == 0))
      return &rows[k];
  return NULL;
}

/* An old spelling: one warning per process and spelling, then the option
 * it stands for. */
static const struct cli_opt *undeprecate(const struct cli_opt *rows, const struct cli_opt *o)
{
  static const struct cli_opt *warned[32];
  unsigned k = 0;
  char old[64];
  while (k < GS_NITEMS(warned) && warned[k] && warned[k] != o)
    k++;
  if (k < GS_NITEMS(warned) && !warned[k]) {
    warned[k] = o;
    if (o->name)
      snprintf(old, sizeof(old), "--%s", o->name);
    else
      snprintf(old, sizeof(old), "-%c", o->letter);
    fprintf(stderr, "gpuslice: warning: %s is deprecated; use %s (docs/cli.md, \"Deprecated "
                    "spellings\")\n", old, o->deprecated);
  }
  return row_of(rows, 0, o->deprecated + 2);
}

/* getopt_long's tables from the rows; false when a verb's table is too big. */
static bool build(const struct cli_opt *rows, struct option *opts, char *shorts, size_t ssize)
{
  unsigned n = 0;
  size_t len = strlen(shorts);
  opts[n++] = (struct option){"help", no_argument, NULL, 'h'};
  for (unsigned k = 0; rows && (rows[k].name || rows[k].letter); k++) {
    if (n + 1 >= MAX_OPTS || len + 3 >= ssize)
      return false;
    if (rows[k].name)
      opts[n++] = (struct option){rows[k].name, rows[k].arg ? required_argument : no_argument,
                                  NULL, ROW_BASE + (int)k};
    if (rows[k].letter) {
      shorts[len++] = rows[k].letter;
      if (rows[k].arg)
        shorts[len++] = ':';
    }
  }
  shorts[len] = 0;
  opts[n] = (struct option){0};
  return true;
}

/* An unknown option: argv[at] (at 0: the short option optopt), refused
 * with the verb's reason when it has one for that spelling. */
static int unknown(struct cli *c, int at, char **argv, const char *words)
{
  char word[64];
  const char *why;
  if (at)
    snprintf(word, sizeof(word), "%.*s", (int)strcspn(argv[at], "="), argv[at]);
  else
    snprintf(word, sizeof(word), "-%c", optopt);
  if (c->verb->spec && c->verb->spec->refusal && (why = c->verb->spec->refusal(word)))
    return cli_usage("%s: not taken by `gpuslice %s`: %s", word, words, why);
  return cli_usage("%s: unknown option (`gpuslice %s --help` lists them); usage: %s", word, words,
                   cli_synopsis(c));
}

int cli_getopt(struct cli *c, int argc, char **argv,
               int (*on_opt)(struct cli *, int, const char *, void *), void *arg)
{
  const struct cli_opt *rows = c->verb->spec ? c->verb->spec->opts : NULL, *o;
  struct option opts[MAX_OPTS + 1];
  char shorts[2 * MAX_OPTS + 4] = ":h", words[64];
  int ch, rc;
  cli_verb_words(c->verb, words, sizeof(words));
  if (!build(rows, opts, shorts, sizeof(shorts)))
    return -cli_usage("%s: too many options for the command line's table", words);
  optind = 0; /* 0, not 1: glibc then resets all of its scanning state */
  opterr = 0;
  while ((ch = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
    if (ch == 'h') {
      cli_verb_help(c->verb, stdout);
      return 0;
    }
    if (ch == '?') /* a short option in a cluster is not argv[optind - 1]: name it by optopt */
      return -unknown(c, optopt && strncmp(argv[optind - 1], "--", 2) != 0 ? 0 : optind - 1,
                      argv, words);
    if (ch == ':')
      return -cli_usage("%s: missing value; usage: %s", argv[optind - 1], cli_synopsis(c));
    o = ch >= ROW_BASE ? &rows[ch - ROW_BASE] : row_of(rows, (char)ch, NULL);
    if (o && o->deprecated)
      o = undeprecate(rows, o);
    if (!o)
      return -cli_usage("%s: not an option of this command; usage: %s", argv[optind - 1],
                        cli_synopsis(c));
    if (o->val == CLI_V_GPUS)
      c->gpus = optarg;
    else if (o->val == CLI_V_JSON)
      c->json = true;
    else if (!on_opt)
      return -cli_usage("%s: not an option of this command; usage: %s", argv[optind - 1],
                        cli_synopsis(c));
    else if ((rc = on_opt(c, o->val, optarg, arg)) != 0)
      return -rc;
  }
  return optind;
}

int cli_duration(const char *option, const char *value, uint64_t bare_unit_us, uint64_t min_us,
                 uint64_t max_us, uint64_t *out_us)
{
  struct gs_err err = {0};
  if (gs_duration_parse(&err, option, value, bare_unit_us, min_us, max_us, out_us) != 0)
    return cli_usage("%s", err.msg);
  return 0;
}

int cli_duration_in(const char *option, const char *value, uint64_t bare_unit_us, uint64_t min_us,
                    uint64_t max_us, uint64_t unit_us, unsigned *out)
{
  uint64_t us;
  int rc = cli_duration(option, value, bare_unit_us, min_us, max_us, &us);
  if (rc == 0)
    *out = (unsigned)((us + unit_us - 1) / unit_us);
  return rc;
}

int cli_fail_file(const struct gs_err *err)
{
  fprintf(stderr, "gpuslice: %s\n", err->msg);
  return err->code == GS_E_NO_MEMORY ? GS_EXIT_FAILED : GS_EXIT_USAGE;
}
