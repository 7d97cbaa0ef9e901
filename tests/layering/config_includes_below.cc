// The positive control of the layering test: a file of the config layer that includes its own
// headers and those of the layers it declares (core, naming, net, workspace) compiles.
#include "config/config.h"
#include "core/result.h"
#include "naming/backend_kind.h"
#include "net/policy.h"
#include "workspace/workspace.h"
