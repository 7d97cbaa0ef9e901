// tnk-agent as the guest's PID 1: the boot steps in order (mounts, hostname, /etc/hosts, an empty
// /etc/resolv.conf, loopback and the optional NIC address with its connect bridge, the workspace), then
// the protocol on the virtio-serial port, reconnecting whenever the host side reconnects, and finally
// the poweroff. Never returns: PID 1 must not exit.
#pragma once

namespace tnk::guest {

[[noreturn]] void run_as_init();

}  // namespace tnk::guest
