package fitgo

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// laterHandler sends records to slog.Default's handler as it is when they
// are logged, not as it was at start-up, and drops them until armed: the
// blank import runs before main configures logging, and it writes its one
// start-up line itself.
type laterHandler struct {
	armed *atomic.Bool
	ops   []handlerOp // WithAttrs and WithGroup calls, in order
}

type handlerOp struct {
	group string
	attrs []slog.Attr
}

func (h *laterHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.armed.Load() && slog.Default().Handler().Enabled(ctx, level)
}

func (h *laterHandler) Handle(ctx context.Context, r slog.Record) error {
	if !h.armed.Load() {
		return nil
	}
	return h.target().Handle(ctx, r)
}

func (h *laterHandler) target() slog.Handler {
	t := slog.Default().Handler()
	for _, op := range h.ops {
		if op.attrs != nil {
			t = t.WithAttrs(op.attrs)
		} else {
			t = t.WithGroup(op.group)
		}
	}
	return t
}

func (h *laterHandler) with(op handlerOp) *laterHandler {
	ops := make([]handlerOp, len(h.ops), len(h.ops)+1)
	copy(ops, h.ops)
	return &laterHandler{armed: h.armed, ops: append(ops, op)}
}

func (h *laterHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	return h.with(handlerOp{attrs: attrs})
}

func (h *laterHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.with(handlerOp{group: name})
}
