// Package headless is the director of headless runs (seed 002): work
// items, runs bound to exactly one work item, the append-only receipts of
// each run, typed notes, verifier attestations, commit requests, and the
// AHDB state vector as a pure projection of the receipts.
//
// The Director holds the rules (validation, dependencies, one active run
// per work item, the run's status machine, idempotent appends); a Store
// keeps the rows (choird/store implements it on Postgres; MemStore keeps
// them in memory). Nothing here does I/O but through the Store, so the
// director loop that wires the scheduler, the executor, the verifiers and
// the commit (not built yet) is a short composition of these calls:
//
//	item := d.AddWorkItem(...)          // or a split of a bigger one
//	run := d.StartRun(item.ID, ...)     // queued
//	d.MarkRunning(run.ID, base, wt)     // RunStarted
//	d.AddNote / d.Attest                // Note, VerifierResults
//	d.RequestCommit(run.ID, ...)        // CommitRequest, awaiting_approval
//	check := d.CommitCheck(run.ID)      // every required verifier passed?
//	d.DecideCommit(run.ID, ...)         // CommitDecision
//	d.RecordCommit(run.ID, hash)        // CommitReceipt, committed; item done
//	d.EndRun(run.ID, failed, reason)    // RunEnded; item open again
//
// Project(receipts) rebuilds the state vector from receipts alone.
package headless
