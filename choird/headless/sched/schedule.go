// Package sched decides when headless runs start (seed 002 §2.5): cron
// schedules in a time zone and event triggers (a work item became ready, a
// verifier regressed, a run failed) become run requests, each with a
// deterministic fire key that a Store claims once, so a trigger never
// starts two runs, also across a choird restart; a schedule whose runs keep
// failing with the same failure signature backs off.
//
// The director owns the loop; the Scheduler only answers:
//
//	s := sched.New(store, schedules, sched.Options{})
//	s.Start(ctx)                      // reads the last fires back
//	for {
//		wait until s.NextWake() or an event ev arrives
//		reqs, err := s.Tick(ctx)      // or s.Event(ctx, ev)
//		for _, r := range reqs { enqueue a run for r; later s.Report(r, result) }
//	}
//
// Guarantees and policies:
//   - At most once: a fire is claimed (Store.ClaimFire inserts its key,
//     unique) before its request is returned. A choird that crashes after
//     the claim and before the run is enqueued loses that fire; it never
//     starts it twice.
//   - Catch-up: after downtime (or a backoff), a cron schedule whose slots
//     were missed fires ONCE, for the newest missed slot (Request.Missed
//     says how many were skipped), not once per slot. A schedule new to the
//     store fires from its first slot after Start, never for the past.
//   - Backoff: when the runs a schedule started fail n >= 2 times in a row
//     with the same failure signature, the schedule waits Backoff.Delay(n)
//     (exponential from Base, capped at Max) after the last failure before
//     it fires again; a success or another signature resets it. Cron slots
//     in the wait fire once when it ends; events in the wait are held (one
//     per event id) and fire when it ends. Backoff lives in memory: after a
//     restart the director restores it by replaying Report for the recent
//     runs of each schedule, found by their triggers (ScheduleOf) and read
//     from their receipts; Report counts each run once (Result.Run).
//   - Time: the Scheduler reads time only from Options.Now, so tests drive
//     it with a fake clock.
package sched

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"choir/choird/headless/mood"
	"choir/internal/config"
	"choir/internal/cron"
)

// EventKind is the kind of an event trigger.
type EventKind string

// The event triggers (config.json's schedules[].on).
const (
	WorkItemReady     EventKind = config.OnWorkItemReady
	VerifierRegressed EventKind = config.OnVerifierRegressed
	RunFailed         EventKind = config.OnRunFailed
)

// Event is something that happened to an agent's work, which a schedule
// with a matching On turns into a run request.
type Event struct {
	// ID identifies the event, stably: the same event delivered twice (a
	// restart replaying receipts) has the same ID and fires once. The
	// director uses the id of the receipt that recorded it.
	ID       string
	Kind     EventKind
	Agent    string
	WorkItem string // the work item concerned
	Risk     string // its risk tier, for queries
	Parent   string // its parent work item, for queries
	Run      string // the run that failed or regressed, if any
	At       time.Time
}

// Query selects work items: of the given risk tiers (empty: any) and,
// when Parent is set, the children of that work item.
type Query struct {
	Risk   []string
	Parent string
}

func (q *Query) matches(risk, parent string) bool {
	if q == nil {
		return true
	}
	return (len(q.Risk) == 0 || slices.Contains(q.Risk, risk)) && (q.Parent == "" || q.Parent == parent)
}

// Schedule is one agent's schedule: a cron expression in a location, or
// an event kind; a work item or a query; a mood.
type Schedule struct {
	Agent    string
	ID       string
	Cron     *cron.Schedule // nil for an event schedule
	Location *time.Location // of Cron; nil is UTC
	On       EventKind      // "" for a cron schedule
	WorkItem string
	Query    *Query
	Mood     mood.Mood
}

// FromConfig returns every agent's schedules (agents.<id>.schedules),
// sorted by agent and id. Config validation has checked them; an error
// here means a config that was not validated.
func FromConfig(c *config.Config) ([]Schedule, error) {
	var out []Schedule
	for agent, a := range c.Agents {
		for i, cs := range a.Schedules {
			path := fmt.Sprintf("agents.%s.schedules[%d]", agent, i)
			s := Schedule{Agent: agent, ID: cs.ID, On: EventKind(cs.On), WorkItem: cs.WorkItem}
			m, err := mood.Parse(cs.MoodOrDefault())
			if err != nil {
				return nil, fmt.Errorf("%s.mood: %w", path, err)
			}
			s.Mood = m
			if cs.Query != nil {
				s.Query = &Query{Risk: slices.Clone(cs.Query.Risk), Parent: cs.Query.Parent}
			}
			if cs.Cron != "" {
				if s.Cron, err = cron.Parse(cs.Cron); err != nil {
					return nil, fmt.Errorf("%s.cron: %w", path, err)
				}
				if s.Location, err = cs.Location(); err != nil {
					return nil, fmt.Errorf("%s.tz: %w", path, err)
				}
			}
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Schedule) int {
		if a.Agent != b.Agent {
			return cmpString(a.Agent, b.Agent)
		}
		return cmpString(a.ID, b.ID)
	})
	return out, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Request asks the director for one run.
type Request struct {
	Agent    string
	Schedule string
	// Key is the fire key the Store claimed: FireKey's.
	Key string
	// WorkItem is the work item to run; "" means the oldest ready work
	// item of the agent that Query selects (none ready: no run).
	WorkItem string
	Query    *Query
	Mood     mood.Mood
	// Trigger says what fired, for the RunStarted receipt:
	// "cron <expr> at <slot> (schedule <id>)" or "event <kind> <id>
	// (schedule <id>)", at most MaxTrigger bytes; ScheduleOf reads the
	// schedule back.
	Trigger string
	// At is the cron slot or the event's time.
	At time.Time
	// Missed counts the cron slots skipped by catch-up (0 when none; at
	// most maxMissedCount).
	Missed int
	// Event is the event that fired, nil for cron.
	Event *Event
}

// MaxTrigger bounds a Request's Trigger, so a run's trigger keeps the
// schedule's name whole.
const MaxTrigger = 200

// trigger is what fired, ending with the schedule that fired it: a run's
// trigger names its schedule, so the director can report the run's end
// to it after a restart (backoff) from the receipts alone.
func trigger(schedule, what string) string {
	tail := " (schedule " + schedule + ")"
	if n := MaxTrigger - len(tail); len(what) > n {
		what = what[:max(n, 0)]
	}
	return what + tail
}

// ScheduleOf returns the schedule named at the end of a run's trigger
// (Request.Trigger), false for a run no schedule started.
func ScheduleOf(trigger string) (string, bool) {
	rest, ok := strings.CutSuffix(trigger, ")")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(rest, " (schedule ")
	if i < 0 {
		return "", false
	}
	id := rest[i+len(" (schedule "):]
	if !config.NamePattern.MatchString(id) {
		return "", false
	}
	return id, true
}

// Fire is one claimed trigger, as the Store keeps it.
type Fire struct {
	Agent    string
	Schedule string
	Key      string    // FireKey
	Cron     bool      // a cron slot (LastFire reads these), not an event
	At       time.Time // the slot or the event's time
}

// FireKey is the deterministic key of a cron slot ("cron@" and the slot in
// RFC 3339, UTC) or of an event ("event:" and its id); a Store keeps it
// unique per agent and schedule.
func FireKey(slot time.Time, ev *Event) string {
	if ev != nil {
		return "event:" + ev.ID
	}
	return "cron@" + slot.UTC().Format(time.RFC3339)
}
