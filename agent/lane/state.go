package lane

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"choir/internal/logs"
)

// EdgeState is a state of the edge lane (design §7.2). There is no
// EDGE_WAITING_CORE: the edge stays responsive while cores run.
type EdgeState int

const (
	EdgeIdle EdgeState = iota
	EdgeContextReady
	EdgeReasoning
	EdgeWaitingTool
	EdgeFinalizing
	EdgeTerminated
)

var edgeNames = [...]string{"EDGE_IDLE", "EDGE_CONTEXT_READY", "EDGE_REASONING", "EDGE_WAITING_TOOL", "EDGE_FINALIZING", "EDGE_TERMINATED"}

func (s EdgeState) String() string {
	if s < 0 || int(s) >= len(edgeNames) {
		return fmt.Sprintf("EdgeState(%d)", int(s))
	}
	return edgeNames[s]
}

// CoreState is a state of one core job (design §7.3).
type CoreState int

const (
	CoreIdle CoreState = iota
	CoreCreated
	CoreInitializing
	CoreReasoning
	CoreWaitingTool
	CoreCompleted
	CoreTerminated
)

var coreNames = [...]string{"CORE_IDLE", "CORE_CREATED", "CORE_INITIALIZING", "CORE_REASONING", "CORE_WAITING_TOOL", "CORE_COMPLETED", "CORE_TERMINATED"}

func (s CoreState) String() string {
	if s < 0 || int(s) >= len(coreNames) {
		return fmt.Sprintf("CoreState(%d)", int(s))
	}
	return coreNames[s]
}

// Ended reports whether the job is over: completed or terminated.
func (s CoreState) Ended() bool { return s == CoreCompleted || s == CoreTerminated }

// Transition is one legal move of a state machine and what causes it.
type Transition[S ~int] struct {
	From, To S
	On       string
}

// EdgeTransitions is the edge lane's table (design §7.2). "Any ->
// TERMINATED" is spelled out for every state but TERMINATED itself.
var EdgeTransitions = withAny([]Transition[EdgeState]{
	{EdgeIdle, EdgeContextReady, "UserMessage"},
	{EdgeContextReady, EdgeReasoning, "inject memory context, call LLM"},
	{EdgeReasoning, EdgeFinalizing, "Finish"},
	{EdgeReasoning, EdgeWaitingTool, "ToolProposal"},
	{EdgeReasoning, EdgeReasoning, "choir.core.spawn"},
	{EdgeWaitingTool, EdgeReasoning, "ToolResult"},
	{EdgeFinalizing, EdgeIdle, "result delivered"},
	{EdgeReasoning, EdgeFinalizing, "LLM error"},
}, EdgeTerminated, "Cancel, BudgetExceeded, fatal error", EdgeIdle, EdgeContextReady, EdgeReasoning, EdgeWaitingTool, EdgeFinalizing)

// CoreTransitions is a core job's table (design §7.3). COMPLETED and
// TERMINATED are final.
var CoreTransitions = withAny([]Transition[CoreState]{
	{CoreIdle, CoreCreated, "CoreJobStart"},
	{CoreCreated, CoreInitializing, "load task, context, set budgets"},
	{CoreInitializing, CoreReasoning, "LLM call"},
	{CoreReasoning, CoreCompleted, "FinalResult"},
	{CoreReasoning, CoreWaitingTool, "ToolProposal"},
	{CoreReasoning, CoreReasoning, "InstructionInjected"},
	{CoreReasoning, CoreTerminated, "LLM error"},
	{CoreWaitingTool, CoreReasoning, "ToolResult"},
}, CoreTerminated, "Cancel, Error, BudgetExceeded", CoreIdle, CoreCreated, CoreInitializing, CoreWaitingTool)

func withAny[S ~int](t []Transition[S], to S, on string, from ...S) []Transition[S] {
	for _, f := range from {
		t = append(t, Transition[S]{f, to, on})
	}
	return t
}

// ErrIllegalTransition reports a move the table does not have; the state
// is unchanged.
var ErrIllegalTransition = errors.New("lane: illegal state transition")

// machine is one state machine: the current state and its table. An
// illegal move is refused and logged.
type machine[S interface {
	~int
	String() string
}] struct {
	mu    sync.Mutex
	cur   S
	legal map[[2]S]bool
	lane  string
	log   *slog.Logger
}

func newMachine[S interface {
	~int
	String() string
}](initial S, table []Transition[S], lane string, log *slog.Logger) *machine[S] {
	m := &machine[S]{cur: initial, legal: make(map[[2]S]bool, len(table)), lane: lane, log: log}
	for _, t := range table {
		m.legal[[2]S{t.From, t.To}] = true
	}
	return m
}

// to moves to next because of on, or refuses and logs an illegal move.
// Every move is logged with the lane (§22.1 lane transitions).
func (m *machine[S]) to(next S, on string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.legal[[2]S{m.cur, next}] {
		m.log.Error("illegal state transition refused", logs.KeyLane, m.lane, "from", m.cur.String(), "to", next.String(), "on", on)
		return fmt.Errorf("%w: %s -> %s on %s", ErrIllegalTransition, m.cur, next, on)
	}
	m.log.Info("lane transition", logs.KeyLane, m.lane, "from", m.cur.String(), "to", next.String(), "on", on)
	m.cur = next
	return nil
}

// get returns the current state.
func (m *machine[S]) get() S {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur
}
