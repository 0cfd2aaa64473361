package fakecri

import (
	"testing"

	"github.com/benbjohnson/clock"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"orch.io/orch/fakecri/fakecritest/fixture"
	"orch.io/orch/fakecri/script"
)

const gi = 1 << 30

func newFixture(t testing.TB, s *script.Script) *fixture.Fixture[*Runtime] {
	t.Helper()
	return fixture.New(t, func(mock *clock.Mock) (*Runtime, error) {
		return New(Options{Clock: mock, Seed: 7, Script: s})
	})
}

func wantCode(t testing.TB, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("want %v, got %v", code, err)
	}
}

func u32(v uint32) *uint32 { return &v }
