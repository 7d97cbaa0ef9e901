// A file of the vm backend that reaches sideways into the ns backend. The layering test expects this to
// fail to compile ("backend/ns/sandbox.h: No such file or directory"): what both backends need (cgroups,
// limits, the loopback listener, protected paths, the system-call helpers) is the linux layer.
#include "backend/ns/sandbox.h"
#include "linux/cgroups.h"
