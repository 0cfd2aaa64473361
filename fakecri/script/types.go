package script

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Quantity is a number written as a Kubernetes quantity ("64Mi", "250m",
// "1.5", 1024). Byte fields read it as bytes, CPU fields as cores.
type Quantity struct {
	v float64
	s string
}

// Q parses a quantity and panics if it is malformed; for Go-built scripts.
func Q(s string) Quantity {
	q, err := ParseQuantity(s)
	if err != nil {
		panic(err)
	}
	return q
}

// N returns a quantity of the plain number v.
func N(v float64) Quantity { return Quantity{v: v} }

// ParseQuantity parses a Kubernetes quantity.
func ParseQuantity(s string) (Quantity, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return Quantity{v: f, s: s}, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return Quantity{}, fmt.Errorf("quantity %q: %w", s, err)
	}
	return Quantity{v: q.AsApproximateFloat64(), s: s}, nil
}

// Value returns the number.
func (q Quantity) Value() float64 { return q.v }

func (q Quantity) String() string {
	if q.s != "" {
		return q.s
	}
	return strconv.FormatFloat(q.v, 'f', -1, 64)
}

// UnmarshalJSON accepts a string or a number.
func (q *Quantity) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		p, err := ParseQuantity(s)
		if err != nil {
			return err
		}
		*q = p
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("quantity: want a number or a string like \"64Mi\", got %s", b)
	}
	*q = Quantity{v: f}
	return nil
}

// MarshalJSON writes the quantity as it was given.
func (q Quantity) MarshalJSON() ([]byte, error) {
	if q.s != "" {
		return json.Marshal(q.s)
	}
	return json.Marshal(q.v)
}

// Duration is a time.Duration written as a Go duration string ("30s",
// "1m30s", "250ms"); a bare number is seconds.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalJSON accepts "30s" or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("duration: want a string like \"30s\" or seconds, got %s", b)
	}
	*d = Duration(f * float64(time.Second))
	return nil
}

// MarshalJSON writes a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Glob is a compiled pattern: `*` matches any run of characters (slashes
// included), `?` matches one character; everything else is literal. An
// empty pattern matches everything.
type Glob struct {
	pat string
	re  *regexp.Regexp // nil: literal compare (or match-all when pat == "")
}

func CompileGlob(p string) Glob {
	if p == "" || p == "*" {
		return Glob{pat: ""}
	}
	if !strings.ContainsAny(p, "*?") {
		return Glob{pat: p}
	}
	var sb strings.Builder
	sb.WriteString("^")
	for _, r := range p {
		switch r {
		case '*':
			sb.WriteString(".*")
		case '?':
			sb.WriteString(".")
		default:
			sb.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	sb.WriteString("$")
	return Glob{pat: p, re: regexp.MustCompile(sb.String())}
}

func (g Glob) Any() bool { return g.pat == "" }

func (g Glob) Match(s string) bool {
	if g.pat == "" {
		return true
	}
	if g.re == nil {
		return g.pat == s
	}
	return g.re.MatchString(s)
}

var codeByName = func() map[string]codes.Code {
	m := map[string]codes.Code{}
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		m[normCode(c.String())] = c
	}
	m["cancelled"] = codes.Canceled
	return m
}()

func normCode(s string) string {
	return strings.ToLower(strings.ReplaceAll(strings.ReplaceAll(s, "_", ""), " ", ""))
}

// ParseCode reads a gRPC status code by name ("Unavailable",
// "DEADLINE_EXCEEDED", "deadlineexceeded") or number.
func ParseCode(s string) (codes.Code, error) {
	if c, ok := codeByName[normCode(s)]; ok {
		return c, nil
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && n <= int(codes.Unauthenticated) {
		return codes.Code(n), nil
	}
	return 0, fmt.Errorf("unknown gRPC code %q", s)
}
