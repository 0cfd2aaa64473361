package config

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Problem is one thing wrong with a configuration file.
type Problem struct {
	// Line is the 1-based line the problem is at, or 0 when it is not known.
	Line int
	// Field is the field path, for example jwt[1].claimMappings.username.prefix; empty when the
	// problem concerns the whole file.
	Field string
	// Detail is the reason, for example "Required value: prefix must be set when claim is set".
	Detail string
}

// String renders the problem as "path: reason", or just the reason when no field is known.
func (p Problem) String() string {
	if p.Field == "" {
		return p.Detail
	}
	return p.Field + ": " + p.Detail
}

// FileError lists every problem found in one configuration file.
type FileError struct {
	File     string
	Problems []Problem
}

// Error renders one problem per line, each prefixed by the file name and, when known, the line.
func (e *FileError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		if p.Line > 0 {
			fmt.Fprintf(&b, "%s:%d: %s", e.File, p.Line, p)
		} else {
			fmt.Fprintf(&b, "%s: %s", e.File, p)
		}
	}
	return b.String()
}

// Strings returns the problems as "path: reason" strings, without file or line.
func (e *FileError) Strings() []string {
	out := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p.String()
	}
	return out
}

// fileError builds a FileError from validation errors, locating each field's line in the document.
func fileError(file string, doc *document, errs field.ErrorList) *FileError {
	fe := &FileError{File: file}
	for _, err := range errs {
		fe.Problems = append(fe.Problems, Problem{
			Line:   doc.line(err.Field),
			Field:  err.Field,
			Detail: oneLine(err.ErrorBody()),
		})
	}
	return fe
}

// oneLine keeps each problem on one line, so a listing stays one problem per line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}
