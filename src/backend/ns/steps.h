// The steps that forked children (setup child, PID 1, session helper) report to their parent, so
// that the parent, which has the spec's paths, can say what failed on which object.
#pragma once

#include <cerrno>
#include <cstdint>

namespace tnk::ns {

enum class Step : int32_t {
  kNone = 0,
  // Records that are not failures.
  kInitPid,     // value = PID 1's pid in the caller's pid namespace
  kReady,       // PID 1 is ready
  kNoteSysfs,   // /sys could not be mounted (err); the sandbox runs without it
  kSessionPid,  // value = the session's pid

  // The setup child, still in the host's namespaces.
  kJoinCgroup,
  kSetnsUser,
  kUnshare,
  kPrivateMounts,
  kOpenStaging,
  kOpenUpper,
  kOpenWork,
  kOpenReviewLayer,  // review mode: the layer's upper or work directory
  kSetIds,
  kCloneInit,

  // PID 1, building the root.
  kInitSignals,
  kStagingTmpfs,
  kAttachStaging,
  kAttachLower,
  kMountOverlay,
  kOpenRoot,
  kMountDev,
  kDevNode,
  kMountDevpts,
  kMountShm,
  kMountProc,
  kMountTmp,
  kMountRun,
  kBindHosts,
  kBindResolv,
  kMountProject,
  kMountReviewOverlay,  // review mode: the project seen through its layer
  kProtectPath,         // value = the index of the protected path (InitPlan::protected_paths)
  kMountGitDir,
  kProtectGitPath,  // value = the index in InitPlan::git_protected_paths
  kSetHostname,
  kPivotRoot,
  kLoopback,
  kInitStdio,

  // A session: the helper that joins, then the session process before exec.
  kSessionCgroup,
  kSessionSetns,
  kSessionSetIds,
  kCloneSession,
  kSessionSignals,
  kSetsid,
  kControllingTty,
  kStdio,
  kRlimits,
  kRootNamespace,
  kReadonlyView,
  kCapabilities,
  kNoNewPrivs,
  kSeccomp,
  kChdir,
  kExec,
};

// A failure inside a forked child: the step and the errno (err == 0: no failure).
struct StepError {
  Step step = Step::kNone;
  int err = 0;
  int32_t value = 0;  // which object, for the steps that name one (kProtectPath)
  bool ok() const { return err == 0; }
};

// The failure of `step`, just now: its errno (EIO where the call left none). Async-signal-safe.
inline StepError failed_at(Step step) { return {step, errno == 0 ? EIO : errno}; }

}  // namespace tnk::ns
