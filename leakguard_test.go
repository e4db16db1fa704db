package fitgo

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStartLeakGuard: the blank import runs memlimit's leak guard unless
// FITGO=leakguard=off.
func TestStartLeakGuard(t *testing.T) {
	for setting, off := range map[string]bool{"": false, "leakguard=on": false, "leakguard=off": true, "headroom=off,leakguard=off": true} {
		f := &fakeDeps{env: map[string]string{envVar: setting}}
		rep := start(f.deps())
		require.NoError(t, rep.SettingErr, setting)
		require.NotNil(t, f.ml, setting)
		assert.Equal(t, off, f.ml.NoLeakGuard, setting)
	}
}
