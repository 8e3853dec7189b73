package redact

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
)

// Logger returns l with every record redacted by r (see Handler).
func (r *Redactor) Logger(l *slog.Logger) *slog.Logger {
	if h, ok := l.Handler().(*handler); ok && h.r == r {
		return l
	}
	return slog.New(r.Handler(l.Handler()))
}

// Handler wraps h so that the message, every attribute (keys, strings,
// errors, Stringers, anything encoded as JSON) and every attribute added
// with WithAttrs has its secret values replaced before h sees it. Attributes
// added with WithAttrs are redacted again after each Set, so a secret that
// arrives later is kept out of them too.
func (r *Redactor) Handler(h slog.Handler) slog.Handler {
	return &handler{r: r, base: h}
}

type handler struct {
	r    *Redactor
	base slog.Handler
	ops  []op // WithGroup and WithAttrs calls, in order, unredacted
	// built is base with ops applied, redacted by the matcher it names.
	built atomic.Pointer[built]
}

type op struct {
	group string
	attrs []slog.Attr
}

type built struct {
	m *matcher
	h slog.Handler
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.base.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	m := h.r.load()
	inner := h.inner(m)
	if m == nil {
		return inner.Handle(ctx, rec)
	}
	out := slog.NewRecord(rec.Time, rec.Level, m.str(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(m.attr(a))
		return true
	})
	return inner.Handle(ctx, out)
}

// inner is base with the ops applied, redacted by m; rebuilt when m changes.
func (h *handler) inner(m *matcher) slog.Handler {
	if len(h.ops) == 0 {
		return h.base
	}
	if b := h.built.Load(); b != nil && b.m == m {
		return b.h
	}
	in := h.base
	for _, o := range h.ops {
		if o.attrs == nil {
			in = in.WithGroup(o.group)
			continue
		}
		attrs := o.attrs
		if m != nil {
			attrs = make([]slog.Attr, len(o.attrs))
			for i, a := range o.attrs {
				attrs[i] = m.attr(a)
			}
		}
		in = in.WithAttrs(attrs)
	}
	h.built.Store(&built{m: m, h: in})
	return in
}

func (h *handler) with(o op) *handler {
	ops := append(append([]op(nil), h.ops...), o)
	return &handler{r: h.r, base: h.base, ops: ops}
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	return h.with(op{attrs: append([]slog.Attr(nil), attrs...)})
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.with(op{group: name})
}

// attr redacts one attribute.
func (m *matcher) attr(a slog.Attr) slog.Attr {
	a.Key = m.str(a.Key)
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(m.str(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i, x := range g {
			out[i] = m.attr(x)
		}
		a.Value = slog.GroupValue(out...)
	case slog.KindAny:
		a.Value = m.anyValue(v.Any())
	default: // numbers, bools, times, durations hold no text
		a.Value = v
	}
	return a
}

// anyValue redacts what a JSON handler would write for x.
func (m *matcher) anyValue(x any) slog.Value {
	switch x := x.(type) {
	case nil:
		return slog.AnyValue(nil)
	case error:
		return slog.StringValue(m.str(x.Error()))
	case json.RawMessage:
		return slog.AnyValue(json.RawMessage(redactJSON(m, x)))
	case []byte:
		return slog.StringValue(m.str(string(x)))
	case json.Marshaler:
		if raw, err := x.MarshalJSON(); err == nil {
			return slog.AnyValue(json.RawMessage(redactJSON(m, raw)))
		}
	case fmt.Stringer:
		return slog.StringValue(m.str(x.String()))
	}
	raw, err := json.Marshal(x)
	if err != nil {
		return slog.StringValue(m.str(fmt.Sprintf("%+v", x)))
	}
	if len(scan(m, raw, true)) == 0 {
		return slog.AnyValue(x)
	}
	return slog.AnyValue(json.RawMessage(redactJSON(m, raw)))
}
