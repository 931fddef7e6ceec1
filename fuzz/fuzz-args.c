/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-args.c: libFuzzer target for the whole command line. The input is
 * split on NUL or newline into at most 16 words, which follow argv[0] =
 * "gpuslice" into cli_main, against an emulated machine whose state file
 * lives in a per-process directory in /dev/shm (or /tmp), which is also the
 * working directory, so any relative path an input names (--jobs-dir X,
 * bench's CSV, a log directory) lands there too. Its contents are discarded
 * every 256 runs (so a finding may need the runs before it: rerun with
 * -runs=N over the corpus, or replay the input after the same history).
 * A first word "nvidia-mig-parted" runs that command line instead (main.c's
 * dispatch on argv[0]). Any command line must end in an exit status 0..3: no crash, no leak
 * (ASan), no hang. The command line's output goes to /dev/null. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <ftw.h>
#include <unistd.h>

#include "cli/cli.h"

#define MAX_WORDS 16
#define RESET_EVERY 256

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], state[96];

/* Everything below the directory; the directory itself stays while it is
 * the working directory. */
static int remove_below(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
  (void)sb;
  (void)type;
  if (ftw->level > 0)
    remove(path);
  return 0;
}

static void empty_dir(void)
{
  nftw(dir, remove_below, 16, FTW_DEPTH | FTW_PHYS);
}

static void remove_dir(void)
{
  empty_dir();
  if (chdir("/") == 0)
    rmdir(dir);
}

/* A word that may name a path outside the fuzzer's directory: any word with
 * a slash (an absolute path can hide in "--opt=/x" or "-f/x") except the
 * legacy MIG-GPU-<uuid>/<gi>/<ci> device names, or one climbing out with "..". */
static int escapes_dir(const char *word)
{
  return (strchr(word, '/') && strncmp(word, "MIG-", 4) != 0) || strstr(word, "..") != NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  int null;
  (void)argc;
  (void)argv;
  snprintf(dir, sizeof(dir), "/dev/shm/gpuslice-fuzz-args.XXXXXX");
  if (!mkdtemp(dir)) {
    snprintf(dir, sizeof(dir), "/tmp/gpuslice-fuzz-args.XXXXXX");
    if (!mkdtemp(dir)) {
      perror("fuzz-args: mkdtemp");
      abort();
    }
  }
  snprintf(state, sizeof(state), "%s/emu.json", dir);
  if (chdir(dir) != 0) {
    perror("fuzz-args: chdir");
    abort();
  }
  atexit(remove_dir);
  setenv("GPUSLICE_EMU_STATE", state, 1);
  unsetenv("GPUSLICE_EMULATE");
  unsetenv("GPUSLICE_JOBS_DIR");     /* the jobs directory stays beside the state */
  unsetenv("GPUSLICE_MPS_CONTROL");  /* emulated MPS: launch nothing */
  /* Silence the command line once: fd 1 becomes /dev/null. Not fd 2: libFuzzer
   * (through the FILE * it took at startup) and the sanitizers report there.
   * The CLI writes its errors through the `stderr` stream, which glibc lets a
   * program reassign, so only that stream goes to /dev/null.
   * FUZZ_ARGS_VERBOSE=1 keeps the CLI's stderr, to watch what inputs do. */
  null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null < 0 || dup2(null, STDOUT_FILENO) < 0) {
    perror("fuzz-args: /dev/null");
    abort();
  }
  close(null);
  if (!getenv("FUZZ_ARGS_VERBOSE") && !(stderr = fopen("/dev/null", "w"))) {
    perror("fuzz-args: /dev/null");
    abort();
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static unsigned long runs;
  char *copy, *argv[MAX_WORDS + 2];
  int argc = 1, rc;
  size_t start = 0;

  if (runs++ % RESET_EVERY == 0)
    empty_dir();
  if (!(copy = malloc(size + 1)))
    return 0;
  memcpy(copy, data, size);
  copy[size] = 0;
  argv[0] = "gpuslice";
  for (size_t i = 0; i <= size && argc <= MAX_WORDS; i++) {
    if (i < size && copy[i] != 0 && copy[i] != '\n')
      continue;
    copy[i] = 0;
    argv[argc++] = copy + start;
    start = i + 1;
  }
  argv[argc] = NULL;
  /* An input may name files (--jobs-dir, --emu-state, bench's CSV, a log
   * directory): only inside the working directory, which is ours. Verbs that
   * serve until SIGTERM never end by design (their request path has its own
   * target, fuzz-http). */
  for (int i = 1; i < argc; i++)
    if (escapes_dir(argv[i])) {
      free(copy);
      return -1; /* not added to the corpus */
    }
  if (cli_is_open_ended(argc, argv)) {
    free(copy);
    return -1;
  }
  /* A first word "nvidia-mig-parted" is gpuslice run under that name. */
  if (argc > 1 && strcmp(argv[1], "nvidia-mig-parted") == 0)
    rc = cli_mig_parted_main(argc - 1, argv + 1);
  else
    rc = cli_main(argc, argv);
  fflush(stdout);
  fflush(stderr);
  free(copy);
  if (rc < 0 || rc > GS_EXIT_STATE) {
    dprintf(STDERR_FILENO, "fuzz-args: exit status %d is none of 0..3\n", rc);
    abort();
  }
  return 0;
}
