/* main.c: the gpuslice executable; everything else is in cli.c, so tests and
 * fuzzers can drive the same command line in-process. */
#include "cli/cli.h"

int main(int argc, char **argv)
{
  return cli_main(argc, argv);
}
