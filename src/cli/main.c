/* SPDX-License-Identifier: Apache-2.0 */
/* main.c: the gpuslice executable; everything else is in cli.c, so tests and
 * fuzzers can drive the same command line in-process. Installed or linked
 * as nvidia-mig-parted, it is NVIDIA's command line instead. */
#include "cli/cli.h"

#include <string.h>

int main(int argc, char **argv)
{
  const char *name = argc > 0 ? strrchr(argv[0], '/') : NULL;
  name = name ? name + 1 : argc > 0 ? argv[0] : "";
  if (strcmp(name, "nvidia-mig-parted") == 0)
    return cli_mig_parted_main(argc, argv);
  return cli_main(argc, argv);
}
