/* The single GError domain of tlbsim (see include/tlbsim/util/error.h). */
#include "tlbsim/util/error.h"

G_DEFINE_QUARK(tlbsim-error-quark, tlbsim_error)
