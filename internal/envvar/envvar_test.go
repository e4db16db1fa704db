package envvar

import (
	"bytes"
	"math"
	"math/big"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// atoiCases are shared by the tables and the fuzz seeds. modern is the
// Go >= 1.26 rule (strconv.ParseInt), legacy the rule up to Go 1.25.
var atoiCases = []struct {
	in             string
	bits           int
	modern, legacy int64
	modernOK       bool
	legacyOK       bool
}{
	{"", 32, 0, 0, false, false},
	{"0", 32, 0, 0, true, true},
	{"4", 32, 4, 4, true, true},
	{"0004", 32, 4, 4, true, true},
	{"-1", 32, -1, -1, true, true},
	{"+4", 32, 4, 0, true, false},
	{"-", 32, 0, 0, false, true},
	{"+", 32, 0, 0, false, false},
	{"--1", 32, 0, 0, false, false},
	{" 4", 32, 0, 0, false, false},
	{"4 ", 32, 0, 0, false, false},
	{"4\n", 32, 0, 0, false, false},
	{"1_000", 32, 0, 0, false, false},
	{"0x10", 32, 0, 0, false, false},
	{"2.5", 32, 0, 0, false, false},
	{"four", 32, 0, 0, false, false},
	{"2147483647", 32, math.MaxInt32, math.MaxInt32, true, true},
	{"2147483648", 32, 0, 0, false, false},
	{"-2147483648", 32, math.MinInt32, math.MinInt32, true, true},
	{"-2147483649", 32, 0, 0, false, false},
	{"9223372036854775807", 64, math.MaxInt64, math.MaxInt64, true, true},
	{"9223372036854775808", 64, 0, 0, false, false},
	{"-9223372036854775808", 64, math.MinInt64, math.MinInt64, true, true},
	{"99999999999999999999999", 64, 0, 0, false, false},
	{"18446744073709551616", 64, 0, 0, false, false},
}

func TestAtoiRules(t *testing.T) {
	for _, tc := range atoiCases {
		t.Run(tc.in, func(t *testing.T) {
			n, ok := legacyAtoi(tc.in, tc.bits)
			assert.Equal(t, tc.legacyOK, ok, "legacy ok")
			if ok {
				assert.Equal(t, tc.legacy, n, "legacy value")
			}
			m, err := strconv.ParseInt(tc.in, 10, tc.bits)
			assert.Equal(t, tc.modernOK, err == nil, "modern ok")
			if err == nil {
				assert.Equal(t, tc.modern, m, "modern value")
			}
			// runtimeAtoi follows the toolchain's runtime.
			r, rok := runtimeAtoi(tc.in, tc.bits)
			if plusSignAccepted() {
				assert.Equal(t, tc.modernOK, rok)
				if rok {
					assert.Equal(t, tc.modern, r)
				}
			} else {
				assert.Equal(t, tc.legacyOK, rok)
				if rok {
					assert.Equal(t, tc.legacy, r)
				}
			}
		})
	}
}

func plusSignAccepted() bool { _, ok := runtimeAtoi("+1", 32); return ok }

func TestGOMAXPROCS(t *testing.T) {
	for _, tc := range []struct {
		in string
		n  int
		ok bool
	}{
		{"", 0, false},
		{"1", 1, true},
		{"8", 8, true},
		{"08", 8, true},
		{"0", 0, false},
		{"-0", 0, false},
		{"-1", 0, false},
		{"-", 0, false},
		{"2.5", 0, false},
		{"auto", 0, false},
		{" 2", 0, false},
		{"2 ", 0, false},
		{"2147483647", math.MaxInt32, true},
		{"2147483648", 0, false},
		{"1e3", 0, false},
	} {
		n, ok := GOMAXPROCS(tc.in)
		assert.Equal(t, tc.ok, ok, "GOMAXPROCS=%q", tc.in)
		assert.Equal(t, tc.n, n, "GOMAXPROCS=%q", tc.in)
	}
	// The sign rule depends on the toolchain, like the runtime's.
	n, ok := GOMAXPROCS("+3")
	if plusSignAccepted() {
		assert.True(t, ok)
		assert.Equal(t, 3, n)
	} else {
		assert.False(t, ok)
	}
}

func TestGODEBUG(t *testing.T) {
	const key = "containermaxprocs"
	for _, tc := range []struct {
		name  string
		def   int32
		lists []string
		v     int32
		from  int
	}{
		{"nothing", 1, nil, 1, -1},
		{"empty lists", 1, []string{"", ""}, 1, -1},
		{"go.mod default off", 1, []string{"containermaxprocs=0,updatemaxprocs=0", ""}, 0, 0},
		{"env overrides default", 1, []string{"containermaxprocs=0", "containermaxprocs=1"}, 1, 1},
		{"env turns it off", 1, []string{"", "x=1,containermaxprocs=0"}, 0, 1},
		{"last field wins", 1, []string{"", "containermaxprocs=0,containermaxprocs=1"}, 1, 1},
		{"invalid value skipped", 1, []string{"containermaxprocs=0", "containermaxprocs=yes"}, 0, 0},
		{"empty value skipped", 1, []string{"", "containermaxprocs="}, 1, -1},
		{"no equals skipped", 1, []string{"", "containermaxprocs"}, 1, -1},
		{"prefix is another key", 1, []string{"", "containermaxprocsx=0,xcontainermaxprocs=0"}, 1, -1},
		{"spaces are not trimmed", 1, []string{"", " containermaxprocs=0,containermaxprocs= 0"}, 1, -1},
		{"other value", 1, []string{"", "containermaxprocs=7"}, 7, 1},
		{"negative", 1, []string{"", "containermaxprocs=-1"}, -1, 1},
		{"out of int32 range", 1, []string{"", "containermaxprocs=4294967296"}, 1, -1},
		{"trailing comma", 1, []string{"", "containermaxprocs=0,"}, 0, 1},
		{"double equals", 1, []string{"", "containermaxprocs==0"}, 1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, from := GODEBUG(key, tc.def, tc.lists...)
			assert.Equal(t, tc.v, v)
			assert.Equal(t, tc.from, from)
		})
	}
}

func FuzzLegacyAtoi(f *testing.F) {
	for _, tc := range atoiCases {
		f.Add(tc.in, tc.bits == 64)
	}
	f.Fuzz(func(t *testing.T, s string, wide bool) {
		bitSize := 32
		if wide {
			bitSize = 64
		}
		n, ok := legacyAtoi(s, bitSize)
		// The legacy rule is strconv's without '+' and with a lone "-" as 0.
		switch {
		case s == "-":
			if !ok || n != 0 {
				t.Fatalf("legacyAtoi(%q) = %d, %v; want 0, true", s, n, ok)
			}
		case strings.HasPrefix(s, "+"):
			if ok {
				t.Fatalf("legacyAtoi(%q) accepted a '+'", s)
			}
		default:
			m, err := strconv.ParseInt(s, 10, bitSize)
			if ok != (err == nil) || ok && n != m {
				t.Fatalf("legacyAtoi(%q, %d) = %d, %v; strconv says %d, %v", s, bitSize, n, ok, m, err)
			}
		}
	})
}

func FuzzGOMAXPROCS(f *testing.F) {
	for _, tc := range atoiCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := GOMAXPROCS(s)
		if !ok {
			if n != 0 {
				t.Fatalf("GOMAXPROCS(%q) = %d with ok false", s, n)
			}
			return
		}
		if n <= 0 || n > math.MaxInt32 {
			t.Fatalf("GOMAXPROCS(%q) = %d: out of range", s, n)
		}
		// What is honoured is a decimal spelling of n.
		digits := strings.TrimLeft(strings.TrimPrefix(s, "+"), "0")
		if digits != strconv.Itoa(n) {
			t.Fatalf("GOMAXPROCS(%q) = %d", s, n)
		}
	})
}

func FuzzGODEBUG(f *testing.F) {
	f.Add("containermaxprocs=0,updatemaxprocs=0", "containermaxprocs=1")
	f.Add("", "containermaxprocs=-1,containermaxprocs=x")
	f.Add("a=1,,b", "containermaxprocs")
	f.Fuzz(func(t *testing.T, def, env string) {
		v, from := GODEBUG("containermaxprocs", 1, def, env)
		switch from {
		case -1:
			if v != 1 {
				t.Fatalf("no list decided but v = %d", v)
			}
		case 0, 1:
			list := []string{def, env}[from]
			field := "containermaxprocs=" + strconv.Itoa(int(v))
			// The deciding list holds a field with this value (possibly
			// spelled with a sign or leading zeros).
			if !strings.Contains(list, "containermaxprocs=") {
				t.Fatalf("list %d = %q decided v = %d (%s)", from, list, v, field)
			}
			if from == 0 {
				// The environment must not contain a valid setting.
				if v2, from2 := GODEBUG("containermaxprocs", 1, env); from2 == 0 {
					t.Fatalf("env %q sets %d but the default list won", env, v2)
				}
			}
		default:
			t.Fatalf("from = %d", from)
		}
	})
}

func TestMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"", 0, false},
		{"536870912", 536870912, false},
		{" 536870912\n", 536870912, false},
		{"512Mi", 512 << 20, false},
		{"1Gi", 1 << 30, false},
		{"512M", 512e6, false},
		{"0.5Gi", 512 << 20, false},
		{"0", 0, true},
		{"0Mi", 0, true},
		{"512", 0, true}, // 512Mi with divisor 1Mi
		{"1048575", 0, true},
		{"1048576", 1 << 20, false},
		{"-5", 0, true},
		{"+268435456", 0, true},
		{"0x10000000", 0, true},
		{"1e9", 0, true},
		{"99999999999999999999", 0, true},
		{"8Ei", 0, true},
	} {
		got, err := MemoryLimit(tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
		assert.Equal(t, tc.err, err != nil, "%q: %v", tc.in, err)
	}
}

// TestCPULimit: cores with a decimal point, millicores with an m, and a
// bare integer of at least 1000 as millicores (the downward API's divisor
// 1m); a smaller bare integer may be whole cores (divisor 1) and is an error.
func TestCPULimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64 // millicores
		err  string
	}{
		{"", 0, ""},
		{" \t", 0, ""},
		{"1000", 1000, ""},
		{"1500", 1500, ""},
		{" 1500\n", 1500, ""},
		{"64000", 64000, ""},
		{"1500m", 1500, ""},
		{"500m", 500, ""},
		{"1m", 1, ""},
		{"1.5", 1500, ""},
		{"0.5", 500, ""},
		{".25", 250, ""},
		{"2.0", 2000, ""},
		{"2.", 2000, ""},
		{"0.0001", 1, ""}, // rounded up to a millicore, as the downward API rounds
		{"9223372036854775807", math.MaxInt64, ""},
		{"999", 0, `"999": a bare integer is millicores, and below 1000 it may be whole cores: write 999m for millicores or 999.0 for cores`},
		{"2", 0, "write 2m for millicores or 2.0 for cores"},
		{"0", 0, "want a positive number"},
		{"0m", 0, "want a positive number"},
		{"0.0", 0, "want a positive number"},
		{"-1", 0, "want a positive number"},
		{"-1500", 0, "want a positive number"},
		{"+1500", 0, "want a positive number"},
		{"1500 m", 0, "want a positive number"},
		{"1 500", 0, "want a positive number"},
		{"1.5 cores", 0, "want a positive number"},
		{"2k", 0, "want a positive number"},
		{"1Gi", 0, "want a positive number"},
		{"1500mm", 0, "want a positive number"},
		{"1e3", 0, "want a positive number"},
		{"0x5dc", 0, "want a positive number"},
		{"m", 0, "want a positive number"},
		{".", 0, "want a positive number"},
		{"99999999999999999999", 0, "want a positive number"},
		{"9223372036854775808", 0, "want a positive number"},
		{"9223372036854775.808", 0, "want a positive number"},
	} {
		got, err := CPULimit(tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
		if tc.err == "" {
			assert.NoError(t, err, "%q", tc.in)
		} else if assert.Error(t, err, "%q", tc.in) {
			assert.Contains(t, err.Error(), "FITGO_CPU_LIMIT: ")
			assert.Contains(t, err.Error(), tc.err)
		}
	}
}

func TestQuantity(t *testing.T) {
	for _, tc := range []struct {
		in   string
		per  uint64
		want int64 // -1: not a quantity
	}{
		{"0", 1, 0},
		{"1", 1, 1},
		{"007", 1, 7},
		{"1Ki", 1, 1024},
		{"1Mi", 1, 1 << 20},
		{"3Gi", 1, 3 << 30},
		{"1Ti", 1, 1 << 40},
		{"1Pi", 1, 1 << 50},
		{"7Ei", 1, 7 << 60},
		{"1k", 1, 1000},
		{"2M", 1, 2e6},
		{"1G", 1, 1e9},
		{"1T", 1, 1e12},
		{"1P", 1, 1e15},
		{"9E", 1, 9e18},
		{"1.5Gi", 1, 3 << 29},
		{"1.", 1, 1},
		{".5k", 1, 500},
		{"1.50Ki", 1, 1536},
		{"0.1", 1, 1},   // rounded up
		{"1001m", 1, 2}, // rounded up
		{"9223372036854775807", 1, math.MaxInt64},
		{"9223372036854775806.5", 1, -1}, // 20 digits
		{"9223372036854775.807k", 1, math.MaxInt64},
		{"9223372036854775.808k", 1, -1},
		{"9223372036854775807001m", 1, -1},
		{"9223372036854775808", 1, -1},
		{"8Ei", 1, -1},
		{"10E", 1, -1},
		{"500m", 1000, 500}, // millicores
		{"0.5", 1000, 500},
		{"2", 1000, 2000},
		{"1.0005", 1000, 1001},
		{"", 1, -1},
		{".", 1, -1},
		{"Ki", 1, -1},
		{"1.2.3", 1, -1},
		{"1K", 1, -1},
		{"1i", 1, -1},
		{"1mi", 1, -1},
		{"1KiB", 1, -1},
		{"1kk", 1, -1},
		{"1e9", 1, -1},
		{"1E9", 1, -1},
		{"+1", 1, -1},
		{"-1", 1, -1},
		{"0x10", 1, -1},
		{" 1", 1, -1},
		{"1_000", 1, -1},
		{"12345678901234567890", 1, -1},
	} {
		got, ok := Quantity(tc.in, tc.per)
		if tc.want < 0 {
			assert.False(t, ok, "%q: %d", tc.in, got)
			continue
		}
		assert.True(t, ok, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

// quantityOracle is Quantity computed with math/big.
func quantityOracle(s string, per uint64) (int64, bool) {
	m := regexp.MustCompile(`^([0-9]*)(?:\.([0-9]*))?(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$`).FindStringSubmatch(s)
	if m == nil || m[1]+m[2] == "" {
		return 0, false
	}
	v, _ := new(big.Rat).SetString("0" + m[1] + "." + m[2] + "0")
	scale := map[string]*big.Rat{"": big.NewRat(1, 1), "m": big.NewRat(1, 1000)}
	for i, c := range []string{"k", "M", "G", "T", "P", "E"} {
		scale[c] = new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(3*(i+1))), nil))
		scale[strings.ToUpper(c)+"i"] = new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), uint(10*(i+1))))
	}
	v.Mul(v, scale[m[3]]).Mul(v, new(big.Rat).SetUint64(per))
	q, r := new(big.Int).QuoRem(v.Num(), v.Denom(), new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64(), q.IsInt64()
}

func FuzzQuantity(f *testing.F) {
	for _, s := range []string{"0", "512Mi", "1.5Gi", "500m", "1e9", "+1", "9223372036854775807", "7.99Ei", ".5k"} {
		f.Add(s, false)
	}
	f.Add("0.5", true)
	f.Fuzz(func(t *testing.T, s string, milli bool) {
		per := map[bool]uint64{false: 1, true: 1000}[milli]
		got, ok := Quantity(s, per)
		want, wok := quantityOracle(s, per)
		// Quantity takes at most 19 significant digits, and a suffix times
		// per within uint64 (not E or Ei in millicores).
		num := strings.TrimRight(s, "EGKMPTikm")
		whole, frac, _ := strings.Cut(num, ".")
		frac = strings.TrimRight(frac, "0")
		tooLong := len(strings.TrimLeft(whole, "0")+frac) > 19 || len(frac)+3 > 19 ||
			milli && (strings.HasSuffix(s, "E") || strings.HasSuffix(s, "Ei"))
		if ok != wok && !(tooLong && !ok) || ok && got != want {
			t.Fatalf("Quantity(%q, %d) = %d, %v; want %d, %v", s, per, got, ok, want, wok)
		}
	})
}

// maxErrText bounds an error's text: the value quoted to 40 bytes (Short;
// escaped, at most 4 bytes a byte), and the message.
const maxErrText = 4*40 + 250

// FuzzCPULimit: a value is accepted only in one of its three forms, and
// then read as Quantity reads it in millicores (a bare integer with an m).
func FuzzCPULimit(f *testing.F) {
	for _, s := range []string{"", "1000", "999", "1500m", "1.5", "0", "-1", "+5", "2k", " 7 ", "1 5", "0.0001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := CPULimit(s)
		tr := strings.TrimSpace(s)
		if v < 0 || err != nil && v != 0 || tr == "" && (v != 0 || err != nil) || tr != "" && (v == 0) == (err == nil) {
			t.Fatalf("CPULimit(%q) = %d, %v", s, v, err)
		}
		if err != nil && len(err.Error()) > maxErrText {
			t.Fatalf("CPULimit(%q): error of %d bytes", s, len(err.Error()))
		}
		if v == 0 {
			return
		}
		num, milli := strings.CutSuffix(tr, "m")
		bare := !milli && !strings.Contains(tr, ".")
		q, ok := Quantity(map[bool]string{false: tr, true: tr + "m"}[bare], 1000)
		if strings.Trim(num, "0123456789.") != "" || !ok || q != v || bare && v < 1000 {
			t.Fatalf("CPULimit(%q) = %d; Quantity gives %d, %v", s, v, q, ok)
		}
	})
}

func FuzzMemoryLimit(f *testing.F) {
	for _, s := range []string{"", "536870912", "0", "-1", "+5", "512Mi", "1.5G", " 7 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := MemoryLimit(s)
		if v < 0 || err != nil && v != 0 || strings.TrimSpace(s) == "" && (v != 0 || err != nil) {
			t.Fatalf("MemoryLimit(%q) = %d, %v", s, v, err)
		}
		if err != nil && len(err.Error()) > maxErrText {
			t.Fatalf("MemoryLimit(%q): error of %d bytes", s, len(err.Error()))
		}
	})
}

func TestLookup(t *testing.T) {
	env := []byte("A=1\x00GOMAXPROCS=2\x00EMPTY=\x00GOMAXPROCS=9\x00NOEQ\x00B==x\x00")
	assert.Equal(t, "1", Lookup(env, "A"))
	assert.Equal(t, "2", Lookup(env, "GOMAXPROCS"), "the first wins")
	assert.Equal(t, "", Lookup(env, "EMPTY"))
	assert.Equal(t, "", Lookup(env, "NOEQ"))
	assert.Equal(t, "=x", Lookup(env, "B"))
	assert.Equal(t, "", Lookup(env, "GOMEMLIMIT"))
	assert.Equal(t, "", Lookup(nil, "A"))
}

// TestStartupIgnoresLaterSetenv: the start-up environment does not change
// when the process changes its own environment, as an init that runs before
// fitgo's may. (Before, fitgo read os.Getenv at its init.)
func TestStartupIgnoresLaterSetenv(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/self/environ is Linux's")
	}
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc/self/environ:", err)
	}
	const key = "FITGO_TEST_STARTUP_ENV"
	startup := Startup()
	wasSet := startup(key) != ""
	t.Setenv(key, "set-after-start")
	assert.Equal(t, "set-after-start", os.Getenv(key))
	after := Startup()
	if !wasSet {
		assert.Empty(t, after(key), "not in the start-up environment")
	}
	if path := os.Getenv("PATH"); path != "" {
		os.Unsetenv("PATH")
		defer os.Setenv("PATH", path)
		assert.Equal(t, path, Startup()("PATH"), "an unset after start-up does not hide it")
	}
}

func FuzzLookup(f *testing.F) {
	f.Add([]byte("A=1\x00B=2\x00"), "B")
	f.Add([]byte("=\x00\x00="), "")
	f.Fuzz(func(t *testing.T, env []byte, key string) {
		v := Lookup(env, key)
		if v != "" && !bytes.Contains(env, []byte(key+"="+v)) {
			t.Fatalf("Lookup(%q, %q) = %q: not in the environment", env, key, v)
		}
	})
}
