package config

import (
	"fmt"
	"io"

	apiv1 "orch.io/orch/components/apis/apiserver/v1"
)

// parsers load each kind from bytes, keyed by kind.
var parsers = map[string]func(name string, data []byte) error{
	apiv1.KindAdmissionConfiguration: func(n string, d []byte) error { _, err := ParseAdmission(n, d); return err },
	apiv1.KindAuthenticationConfiguration: func(n string, d []byte) error {
		_, err := ParseAuthentication(n, d)
		return err
	},
	apiv1.KindAuthorizationConfiguration: func(n string, d []byte) error {
		_, err := ParseAuthorization(n, d)
		return err
	},
	apiv1.KindEncryptionConfiguration: func(n string, d []byte) error { _, err := ParseEncryption(n, d); return err },
	apiv1.KindTracingConfiguration:    func(n string, d []byte) error { _, err := ParseTracing(n, d); return err },
}

// CheckFiles validates each file as the kind its apiVersion and kind name, printing "FILE: ok (Kind)"
// to stdout or every problem to stderr. It returns the process exit code: 0 when every file is
// valid, 1 otherwise (and 2 when no file is given).
func CheckFiles(paths []string, stdout, stderr io.Writer) int {
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "check-config: no files given")
		return 2
	}
	code := 0
	for _, path := range paths {
		kind, err := checkFile(path)
		if err != nil {
			fmt.Fprintln(stderr, err)
			code = 1
			continue
		}
		fmt.Fprintf(stdout, "%s: ok (%s)\n", path, kind)
	}
	return code
}

// checkFile detects a file's kind and validates it as that kind.
func checkFile(path string) (string, error) {
	data, err := readFile(path)
	if err != nil {
		return "", readProblem(path, err)
	}
	doc, probs := parse(data)
	if doc == nil {
		return "", &FileError{File: path, Problems: probs}
	}
	tm, probs := typeMeta(doc)
	if len(probs) == 0 {
		probs = fileError(path, doc, checkTypeMeta(tm, "")).Problems
	}
	if len(probs) > 0 {
		return "", &FileError{File: path, Problems: probs}
	}
	// The kind's own parser reports the rest, duplicate keys included.
	return tm.Kind, parsers[tm.Kind](path, data)
}
