// The shims are declarations only; this file gives the target a translation unit.
#include "CCSyncSystemShims.h"
