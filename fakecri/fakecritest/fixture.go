package fakecritest

import (
	"testing"

	"github.com/benbjohnson/clock"

	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/fakecritest/fixture"
	"orch.io/orch/fakecri/script"
)

// NewFixture is a fixture.Fixture of a fakecri runtime running s (nil: a healthy runtime) with seed
// 7, for the tests of the rooms beside fakecri (its control API, its recorder).
func NewFixture(t testing.TB, s *script.Script) *fixture.Fixture[*fakecri.Runtime] {
	t.Helper()
	return fixture.New(t, func(mock *clock.Mock) (*fakecri.Runtime, error) {
		return fakecri.New(fakecri.Options{Clock: mock, Seed: 7, Script: s})
	})
}
