// Package engine runs phases over a fleet of hosts: it connects to every host
// once, runs an ordered list of phases, each fanned out over the hosts still
// healthy with bounded concurrency, isolates failures per host, gates every
// write behind dry-run, logs each host to its own redacted file, and reports
// everything as events. It never prints and never imports the UI.
//
// # Phases: per host, with a cluster view
//
// A Phase runs on one host at a time (Run(ctx, *Host)); the Runner fans it out
// over the machines the command gave it (Run takes them: the whole inventory,
// or the subset add-node works on). Work that happens once per cluster
// (kubeadm init, a helm release) is a phase whose Targets picks one host,
// usually the first control-plane host, so that its output, log and failure
// are still attributed to a host. Phases that need results of earlier ones
// (the control-plane address) keep them in their own struct, built by the
// command's flow (internal/flow); phase order is the barrier. Optional
// interfaces add behaviour:
//
//   - Targeter: run on a subset of the healthy hosts (default: all of them).
//   - Preparer: cluster-scoped work once per run before the phase fans out
//     (compare every host's facts; create the join token the workers use).
//   - ShouldRunner: skip a host that is already converged, with the reason.
//   - Planner: in dry-run, describe the writes instead of calling Run, for
//     phases whose later steps depend on the results of earlier writes.
//   - CleanUpper: undo scratch state after the run (temp files, locks).
//   - RunStopper: a failure on any host stops the whole run after this phase
//     (preflight, the control plane), rather than only that host.
//
// A Rollout (rollout.go) is a group of phases in the list that runs wave by
// wave instead of over every host at once: a rolling upgrade, where its Next
// chooses each wave's hosts once the previous wave is over, within a budget
// of hosts out of service.
//
// # Steps
//
// Phases act on a host only through its step helpers: Host.Run for reads
// (probes, always run, also in dry-run), Host.Apply and Host.Upload for writes
// (recorded as Planned events in dry-run). The connection itself is not
// exported, so no write bypasses the dry-run gate. Each step emits StepStart
// and one Output event per line, and writes the script and output to the
// host's log, all through the run's redactor (pkg/redact). Phase selection
// errors (*UnknownPhaseError) name the phase, never a flag: the CLI knows
// its flags.
package engine
