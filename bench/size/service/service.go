// Package service is a typical small JSON service: net/http, log/slog with
// a JSON handler, and encoding/json.
package service

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
)

// Main serves GET /hello with a JSON body on $ADDR (default :8080).
func Main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	http.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		log.Info("hello", "remote", r.RemoteAddr)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"hello": r.URL.Query().Get("name")})
	})
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = ":8080"
	}
	log.Error("serve", "err", http.ListenAndServe(addr, nil))
}
