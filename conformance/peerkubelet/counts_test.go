package peerkubelet

import (
	"strings"
	"testing"
	"time"
)

func TestReferenceCounts(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]int
		err      string
	}{
		{name: "uniq -c output, stub skipped",
			in:   "    138 /runtime.v1.RuntimeService/ListContainers\n     3 /runtime.v1.ImageService/ListImages\n      1 cristub\n",
			want: map[string]int{"ListContainers": 138, "ListImages": 3}},
		{name: "a method twice adds up", in: "2 /runtime.v1.RuntimeService/Status\n3 /runtime.v1.RuntimeService/Status\n",
			want: map[string]int{"Status": 5}},
		{name: "count not a number", in: "x /runtime.v1.RuntimeService/Status\n", err: `line 1: count "x"`},
		{name: "negative count", in: "-1 /runtime.v1.RuntimeService/Status\n", err: `line 1: count "-1"`},
		{name: "three fields", in: "1 /runtime.v1.RuntimeService/Status extra\n", err: "line 1: want"},
		{name: "no method", in: "1 /runtime.v1.RuntimeService/\n", err: "names no method"},
		{name: "nothing", in: "1 cristub\n", err: "no CRI method"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReferenceCounts(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestCompare(t *testing.T) {
	ref := map[string]int{"ListContainers": 138, "RunPodSandbox": 3}
	for _, tc := range []struct {
		name              string
		first, total, bad map[string]int
		run               time.Duration
		problem           map[string]string // method -> substring of its Problem ("" holds)
	}{
		{name: "within shape",
			first: map[string]int{"ListContainers": 123, "RunPodSandbox": 2}, total: map[string]int{"ListContainers": 370, "RunPodSandbox": 2},
			run: 3 * time.Minute, problem: map[string]string{"ListContainers": "", "RunPodSandbox": ""}},
		{name: "a start-up method called less often than the reference still holds",
			first: map[string]int{"ListContainers": 100, "RunPodSandbox": 1}, total: map[string]int{"ListContainers": 100, "RunPodSandbox": 1},
			run: time.Minute, problem: map[string]string{"RunPodSandbox": ""}},
		{name: "periodic method too rare",
			first: map[string]int{"ListContainers": 60, "RunPodSandbox": 3}, total: map[string]int{"ListContainers": 60, "RunPodSandbox": 3},
			run: time.Minute, problem: map[string]string{"ListContainers": "outside 69-276"}},
		{name: "periodic method too frequent",
			first: map[string]int{"ListContainers": 300, "RunPodSandbox": 3}, total: map[string]int{"ListContainers": 300, "RunPodSandbox": 3},
			run: time.Minute, problem: map[string]string{"ListContainers": "outside"}},
		{name: "a short run scales its first minute",
			first: map[string]int{"ListContainers": 60, "RunPodSandbox": 3}, total: map[string]int{"ListContainers": 60, "RunPodSandbox": 3},
			run: 30 * time.Second, problem: map[string]string{"ListContainers": ""}},
		{name: "never called",
			first: map[string]int{"ListContainers": 138}, total: map[string]int{"ListContainers": 138},
			run: time.Minute, problem: map[string]string{"RunPodSandbox": "never called"}},
		{name: "failures break the shape, also of methods the reference does not list",
			first: map[string]int{"ListContainers": 138, "RunPodSandbox": 3, "ContainerStatus": 4}, total: map[string]int{"ListContainers": 138, "RunPodSandbox": 3, "ContainerStatus": 4},
			bad: map[string]int{"RunPodSandbox": 1, "ContainerStatus": 4},
			run: time.Minute, problem: map[string]string{"RunPodSandbox": "1 of 3 calls failed", "ContainerStatus": "4 of 4 calls failed", "ListContainers": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := Compare(ref, tc.first, tc.total, tc.bad, tc.run)
			by := map[string]Row{}
			for _, r := range rows {
				by[r.Method] = r
			}
			for m, want := range tc.problem {
				r, ok := by[m]
				if !ok {
					t.Fatalf("no row for %s in %+v", m, rows)
				}
				if want == "" && r.Problem != "" || want != "" && !strings.Contains(r.Problem, want) {
					t.Errorf("%s: problem %q, want %q", m, r.Problem, want)
				}
			}
			if tbl := Table(rows); !strings.Contains(tbl, "| ListContainers | 138 |") {
				t.Errorf("table lacks the reference's ListContainers row:\n%s", tbl)
			}
		})
	}
}
