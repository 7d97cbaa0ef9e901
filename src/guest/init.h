// tnk-agent as the guest's PID 1, run by the kernel from the read-only base disk (its root): first the
// switch to the sandbox's writable disk (tnk.root=), as switch_root does, so that the init that runs is
// never one the guest wrote (security review 3, R3-H2); then the boot steps in order (mounts, hostname,
// /etc/hosts, an empty /etc/resolv.conf, loopback and the optional NIC address with its connect bridge,
// the workspace), then the protocol on the virtio-serial port, reconnecting whenever the host side
// reconnects, and finally the poweroff. Never returns: PID 1 must not exit.
#pragma once

namespace tnk::guest {

[[noreturn]] void run_as_init();

}  // namespace tnk::guest
