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
	wrap  func(slog.Handler) slog.Handler // the WithAttrs and WithGroup calls; nil: none
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
	if h.wrap == nil {
		return slog.Default().Handler()
	}
	return h.wrap(slog.Default().Handler())
}

func (h *laterHandler) with(op func(slog.Handler) slog.Handler) *laterHandler {
	outer := h.wrap
	if outer == nil {
		return &laterHandler{h.armed, op}
	}
	return &laterHandler{h.armed, func(t slog.Handler) slog.Handler { return op(outer(t)) }}
}

func (h *laterHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	return h.with(func(t slog.Handler) slog.Handler { return t.WithAttrs(attrs) })
}

func (h *laterHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.with(func(t slog.Handler) slog.Handler { return t.WithGroup(name) })
}
