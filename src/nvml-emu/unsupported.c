/* SPDX-License-Identifier: Apache-2.0 */
/* unsupported.c: one exported stub per NVML entry point nvml-emu does not
 * emulate (the list in unsupported.h, generated from NVML's header), so a
 * client that resolves or links every symbol loads, and learns per call that
 * the feature is absent: NVML_ERROR_UNINITIALIZED before nvmlInit, else
 * NVML_ERROR_NOT_SUPPORTED. */

/* ABI note: each stub is defined with an empty parameter list, (void), and
 * returns an int-sized enum, whatever the caller's prototype. That is safe on
 * the System V x86-64 and AArch64 ABIs: arguments travel in registers (or on
 * a stack the caller both fills and pops), a callee that reads none of them
 * disturbs nothing, and the result comes back in eax / w0 as for any
 * nvmlReturn_t. (It would not be on callee-pops conventions such as stdcall.) */
#include "nvml-emu/nvml-emu.h"
#include "nvml-emu/unsupported.h"

static nvmlReturn_t unsupported(void)
{
  nvmlReturn_t rc;
  gs__nvemu_lock();
  rc = gs__nvemu_backend() ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_UNINITIALIZED;
  gs__nvemu_unlock();
  return rc;
}

/* Prototype and definition: these names appear in no header of ours. */
#define GS__NVEMU_STUB(name)                                                                       \
  nvmlReturn_t name(void);                                                                         \
  nvmlReturn_t name(void)                                                                          \
  {                                                                                                \
    return unsupported();                                                                          \
  }
GS_NVML_UNSUPPORTED_FUNCTIONS(GS__NVEMU_STUB)
#undef GS__NVEMU_STUB
