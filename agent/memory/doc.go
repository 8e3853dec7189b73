// Package memory is a lane's working memory (design §11.3, tier 1): the
// event window its prompts show, and the reference summary that holds what
// has left the window. It lives in choir-agent's process; snapshots of it
// travel with heartbeats (§13.4).
//
// # Window and pin
//
// A lane adds each of its committed events, rendered as the chat message
// its prompts show (Entry). One entry may be pinned: the user message being
// answered, which is never compacted. View gives the last Window entries
// before the pinned one, the pinned one and every entry after it (with no
// pin, the last Window entries). Everything else a prompt carries (system
// prompt, identity files, CoreJobStart, tool schemas) is the lane's fixed
// content and never enters the memory.
//
// # Reference summary and deltas
//
// The summary is {summary, facts[{key,value,source_event}],
// referenced_sessions, referenced_events}. It changes only through a memory
// delta {mode: append|overwrite, summary_update, add_references,
// remove_references, add_fact, remove_fact}, which Apply validates whole
// before anything changes: a refused delta is a *DeltaError listing every
// failure by JSON pointer, and the summary is untouched. References name
// events of the session by hash (a prefix of 8 or more hex digits is
// resolved through Config.Resolve) or other sessions as "session:<id>".
//
// # Compaction
//
// Sizes are estimated, not tokenised: a message costs its bytes / 4
// (rounded up) plus 4. That is close to what English text and JSON cost
// with current tokenisers, needs no vocabulary in the container, and errs
// on the safe side for code.
//
// Maybe, which the lane calls after each model reply and tool result,
// starts an automatic compaction when the compactable entries of the
// window (all but the pinned one) pass ThresholdPercent of the context
// window minus the fixed content, or when entries have rolled out of the
// window unfolded. It folds the oldest entries until what stays is under
// half of both limits, so compactions are some way apart. Compact (the
// choir.memory.compact tool, /compact, choirctl session compact) folds all
// but the newest ManualKeep entries and the pinned one.
//
// A compaction is one model call, made through Config.Chat in its own
// goroutine while the lane goes on: the events to fold (each cut at 2 KiB,
// identified by the first 12 hex digits of their hash) and the current
// summary, with the one tool memory_delta required. Its delta is validated
// against the summary, committed (Config.Commit: MemoryWriteCommitted),
// then swapped in with the folded entries removed, atomically under the
// memory's lock; Config.Notify tells the user. If anything fails, the
// window keeps its entries and the next trigger tries again. One
// compaction runs at a time per lane.
//
// # Query
//
// Search answers choir.memory.query on the working store: the session's
// whole in-memory log, searched by keywords (every word, any case, in the
// event's strings; newest first, with an excerpt) or by hash (the event's
// payload).
package memory
