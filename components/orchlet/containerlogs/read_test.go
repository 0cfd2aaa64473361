package containerlogs

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func i64(v int64) *int64 { return &v }

func str(v string) *string { return &v }

func writeGz(t *testing.T, p, data string) {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(data))
	w.Close()
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// rotatedSet writes a log as rotation leaves it: a gzipped file, an uncompressed rotated one (a
// partial line cut by the rotation) and the live file, with leftovers a reader must not read.
func rotatedSet(t *testing.T) string {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	writeGz(t, log+".20260101-000010.gz",
		"2026-01-01T00:00:01Z stdout F one\n"+
			"2026-01-01T00:00:02Z stderr F two\n")
	writeFile(t, log+".20260101-000020",
		"2026-01-01T00:00:03.5Z stdout F three\n"+
			"not a CRI line\n"+
			"2026-01-01T00:00:04Z stdout P fo\n")
	writeFile(t, log,
		"2026-01-01T00:00:05Z stdout F ur\n"+
			"2026-01-01T00:00:06Z stdout F five\n")
	writeFile(t, log+".20260101-000000.gz.tmp", "2026-01-01T00:00:00Z stdout F leftover\n")
	writeFile(t, log+".20260101-000005", "2026-01-01T00:00:00Z stdout F already gzipped\n")
	writeGz(t, log+".20260101-000005.gz", "")
	return log
}

// TestReadLogs: the rotated files are read with the live one, oldest first, and the options
// apply across them as the kubelet applies them to one file.
func TestReadLogs(t *testing.T) {
	log := rotatedSet(t)
	now := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	cases := []struct {
		name string
		opts *corev1.PodLogOptions
		want string
	}{
		{"all", nil, "one\ntwo\nthree\nfour\nfive\n"},
		{"tail across files", &corev1.PodLogOptions{TailLines: i64(3)}, "three\nfour\nfive\n"},
		{"tail 0", &corev1.PodLogOptions{TailLines: i64(0)}, ""},
		{"tail beyond", &corev1.PodLogOptions{TailLines: i64(100)}, "one\ntwo\nthree\nfour\nfive\n"},
		{"since time", &corev1.PodLogOptions{SinceTime: &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 3, 0, time.UTC)}}, "three\nfour\nfive\n"},
		{"since seconds", &corev1.PodLogOptions{SinceSeconds: i64(6)}, "four\nfive\n"},
		{"tail then since", &corev1.PodLogOptions{TailLines: i64(4), SinceSeconds: i64(7)}, "three\nfour\nfive\n"},
		{"limit bytes", &corev1.PodLogOptions{LimitBytes: i64(10)}, "one\ntwo\nth"},
		{"limit with tail", &corev1.PodLogOptions{TailLines: i64(2), LimitBytes: i64(7)}, "four\nfi"},
		{"timestamps", &corev1.PodLogOptions{Timestamps: true, TailLines: i64(3)},
			"2026-01-01T00:00:03.500000000Z three\n2026-01-01T00:00:04.000000000Z four\n2026-01-01T00:00:06.000000000Z five\n"},
		{"stdout alone", &corev1.PodLogOptions{Stream: str(corev1.LogStreamStdout)}, "one\nthree\nfour\nfive\n"},
		{"stderr alone", &corev1.PodLogOptions{Stream: str(corev1.LogStreamStderr)}, "two\n"},
		{"both streams", &corev1.PodLogOptions{Stream: str(corev1.LogStreamAll)}, "one\ntwo\nthree\nfour\nfive\n"},
	}
	for _, tc := range cases {
		var b bytes.Buffer
		if err := ReadLogs(context.Background(), log, tc.opts, now, &b, nil); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if b.String() != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, b.String(), tc.want)
		}
	}
}

// TestReadLogsFiles: the live file alone, the rotated files alone (between a rename and the
// runtime's reopen), and no file at all.
func TestReadLogsFiles(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	var b bytes.Buffer
	if err := ReadLogs(context.Background(), log, nil, time.Time{}, &b, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no file: %v, want ErrNotExist", err)
	}
	writeFile(t, log+".20260101-000010", "2026-01-01T00:00:01Z stdout F rotated\n")
	if err := ReadLogs(context.Background(), log, nil, time.Time{}, &b, nil); err != nil || b.String() != "rotated\n" {
		t.Fatalf("rotated only: %q, %v", b.String(), err)
	}
	b.Reset()
	if err := os.Remove(log + ".20260101-000010"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, log, "2026-01-01T00:00:02Z stdout P no end")
	if err := ReadLogs(context.Background(), log, nil, time.Time{}, &b, nil); err != nil || b.String() != "no end" {
		t.Fatalf("live only, a partial last line: %q, %v", b.String(), err)
	}
}

// TestAllLogs lists the files in use oldest first, the live one last.
func TestAllLogs(t *testing.T) {
	log := rotatedSet(t)
	got, err := AllLogs(log)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{log + ".20260101-000005.gz", log + ".20260101-000010.gz", log + ".20260101-000020", log}
	if len(got) != len(want) {
		t.Fatalf("%v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%v, want %v", got, want)
		}
	}
}
