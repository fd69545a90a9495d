// Package doctor checks a machine and its fleet before (and while) fleetd
// runs there, and says for each thing wrong what to do about it: the
// fleetd binary itself, this host's herdr (its socket and protocol), the
// roles file (it parses, every role's boundary holds in this environment)
// and each role's agent CLI (on PATH, at the version fleetd was tested
// with: Tested), NATS with these credentials and the FLEET stream, the
// clock against the cluster's, the lead shim's /healthz, and disk room
// for the store.
//
// Every check is bounded (Config.Timeout each, all at once), so a run
// takes a few seconds even when NATS or herdr is not there. A Result is
// ok, warn, fail or skip (a check that does not apply, with how to make
// it apply); Failed says whether any failed, which `fleetd doctor` turns
// into its exit status.
//
// doctor only reads: it creates no stream, writes no event and starts no
// agent (an agent CLI is run with --version only).
package doctor
