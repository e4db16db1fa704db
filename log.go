package fitgo

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"
)

// laterHandler sends records to slog.Default's handler as it is when they
// are logged, not as it was at start-up, and drops them until armed: the
// blank import runs before main configures logging, and it writes its one
// start-up line itself.
type laterHandler struct {
	armed *atomic.Bool
	ops   []func(slog.Handler) slog.Handler // the WithAttrs and WithGroup calls, in order
}

func (h *laterHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.armed.Load() && slog.Default().Handler().Enabled(ctx, level)
}

func (h *laterHandler) Handle(ctx context.Context, r slog.Record) error {
	if !h.armed.Load() {
		return nil
	}
	t := slog.Default().Handler()
	for _, op := range h.ops {
		t = op(t)
	}
	return t.Handle(ctx, r)
}

func (h *laterHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	return &laterHandler{h.armed, append(slices.Clip(h.ops), func(t slog.Handler) slog.Handler { return t.WithAttrs(attrs) })}
}

func (h *laterHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &laterHandler{h.armed, append(slices.Clip(h.ops), func(t slog.Handler) slog.Handler { return t.WithGroup(name) })}
}
