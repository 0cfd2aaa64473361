package config

import (
	"fmt"
	"io"

	apiv1 "orch.io/orch/components/apis/apiserver/v1"
)

// parsers load each kind from bytes, keyed by kind.
var parsers = map[string]func(name string, data []byte) error{
	apiv1.KindAdmissionConfiguration:      errorOf(ParseAdmission),
	apiv1.KindAuthenticationConfiguration: errorOf(ParseAuthentication),
	apiv1.KindAuthorizationConfiguration:  errorOf(ParseAuthorization),
	apiv1.KindEncryptionConfiguration:     errorOf(ParseEncryption),
	apiv1.KindTracingConfiguration:        errorOf(ParseTracing),
}

// errorOf is a kind's parser that keeps only its verdict.
func errorOf[T any](parse func(name string, data []byte) (T, error)) func(name string, data []byte) error {
	return func(name string, data []byte) error {
		_, err := parse(name, data)
		return err
	}
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
