// A file of the config layer that reaches up into the cli layer. The layering test expects this
// to fail to compile ("cli/command.h: No such file or directory"): config's include view
// (cmake/Layers.cmake) shows config and what it uses, never the layers above it.
#include "cli/command.h"
#include "config/config.h"
