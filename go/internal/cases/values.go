// Package cases reads the language-neutral cases of the repository
// (tests/conformance/cases, tests/interchange/values.json) for Go: their
// values as typed Go values, and buckets and once handles of a case's type
// opened by its name. The Go conformance runner and the Go agent of the
// cross-language tests share it, as the Rust runner and agent share
// tests/conformance/rust/src/lib.rs.
package cases

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
)

// Decode reads JSON as the cases mean it: numbers stay json.Number, so an
// int64 past 2^53 keeps every digit.
func Decode(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}

// Root is the repository's root: found from this package's source file,
// else from the working directory up, as the first directory that holds
// tests/conformance/cases.
func Root() (string, error) {
	var starts []string
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, dir := range starts {
		for {
			if st, err := os.Stat(filepath.Join(dir, "tests", "conformance", "cases")); err == nil && st.IsDir() {
				return dir, nil
			}
			up := filepath.Dir(dir)
			if up == dir {
				break
			}
			dir = up
		}
	}
	return "", fmt.Errorf("no tests/conformance/cases above %v", starts)
}

// Text is a key or owner of a case as text: a string, a number, or
// {"repeat": "x", "times": n}.
func Text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case map[string]any:
		if unit, ok := v["repeat"].(string); ok {
			return strings.Repeat(unit, int(Int(v["times"])))
		}
	}
	panic(fmt.Sprintf("not a key or owner: %#v", v))
}

// Key is a key or owner of a case as the Go API takes it: a JSON integer as
// an int64 (KV-1: the same key as its decimal text), anything else as text.
func Key(v any) any {
	if n, ok := v.(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			return i
		}
	}
	return Text(v)
}

// Int is an int of a case: a number, or {"int": "-9223372036854775808"}.
func Int(v any) int64 {
	var s string
	switch v := v.(type) {
	case json.Number:
		s = v.String()
	case map[string]any:
		s, _ = v["int"].(string)
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("not an int value: %#v", v))
	}
	return i
}

// Uint64 is a uint64 of a case: {"uint64": "18446744073709551615"}.
func Uint64(v any) uint64 {
	m, _ := v.(map[string]any)
	s, _ := m["uint64"].(string)
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("not a uint64 value: %#v", v))
	}
	return u
}

// Float is a float of a case: a number, {"float": "-0" | "NaN" |
// "Infinity" | "-Infinity"}, or {"bits": "7ff8000000000001"}.
func Float(v any) float64 {
	switch v := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(v.String(), 64)
		if err == nil {
			return f
		}
	case map[string]any:
		if bits, ok := v["bits"].(string); ok {
			u, err := strconv.ParseUint(bits, 16, 64)
			if err == nil {
				return math.Float64frombits(u)
			}
		}
		switch v["float"] {
		case "-0":
			return math.Copysign(0, -1)
		case "NaN":
			return math.NaN()
		case "Infinity":
			return math.Inf(1)
		case "-Infinity":
			return math.Inf(-1)
		}
	}
	panic(fmt.Sprintf("not a float value: %#v", v))
}

// Bytes are bytes of a case: {"hex": "00ff"}, repeated {"times": n} when given.
func Bytes(v any) []byte {
	m, _ := v.(map[string]any)
	h, ok := m["hex"].(string)
	unit, err := hex.DecodeString(h)
	if !ok || err != nil {
		panic(fmt.Sprintf("not a bytes value: %#v", v))
	}
	times := int64(1)
	if t, ok := m["times"]; ok {
		times = Int(t)
	}
	return bytes.Repeat(unit, int(times))
}

// JSON is a json value of a case, written as JSON.
func JSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("not a JSON value: %v", err))
	}
	return b
}

// SameJSON compares JSON by value, as serde_json does: objects by their
// fields, integers by value, other numbers by their float64 bits.
func SameJSON(want any, got []byte) bool {
	var g any
	if err := Decode(got, &g); err != nil {
		return false
	}
	return reflect.DeepEqual(canonical(want), canonical(g))
}

// SameJSONValues compares two decoded JSON values as SameJSON does.
func SameJSONValues(want, got any) bool { return reflect.DeepEqual(canonical(want), canonical(got)) }

func canonical(v any) any {
	switch v := v.(type) {
	case json.Number:
		s := v.String()
		if !strings.ContainsAny(s, ".eE") {
			if i, ok := new(big.Int).SetString(s, 10); ok {
				return "int " + i.String()
			}
		}
		f, _ := strconv.ParseFloat(s, 64)
		return "float " + strconv.FormatUint(math.Float64bits(f), 16)
	case int64:
		return "int " + strconv.FormatInt(v, 10)
	case int:
		return "int " + strconv.Itoa(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = canonical(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = canonical(x)
		}
		return out
	case []string:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = x
		}
		return out
	}
	return v
}

// Show is a value for a message, cut to 80 characters.
func Show(v any) string {
	var s string
	switch v := v.(type) {
	case []byte:
		s = fmt.Sprintf("%x", v)
	case json.RawMessage:
		s = string(v)
	case float64:
		s = fmt.Sprintf("%v (bits %x)", v, math.Float64bits(v))
	default:
		s = fmt.Sprintf("%#v", v)
	}
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

// JSONNumber is an integer as a decoded case's JSON holds one.
func JSONNumber(i int64) json.Number { return json.Number(strconv.FormatInt(i, 10)) }
