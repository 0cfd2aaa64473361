package sources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// FileSource reads --pod-manifest-path: a directory whose files each hold one Pod, or one such file.
// Files whose names begin with "." are ignored and subdirectories are not entered, as in Kubernetes.
type FileSource struct {
	// FS holds the manifests; the simulator gives an in-memory one.
	FS fs.FS
	// Path is the manifest path as configured; a leading "/" is dropped to look it up in FS.
	Path string
	// Notifier, when set, tells Run of changes under Path between polls; the simulator sets none.
	Notifier Notifier
}

// OSFileSource reads p from the machine's filesystem and, on Linux, watches it with inotify.
func OSFileSource(p string) (*FileSource, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, fmt.Errorf("--pod-manifest-path %q: %w", p, err)
	}
	return &FileSource{FS: os.DirFS("/"), Path: filepath.ToSlash(abs), Notifier: osNotifier(abs)}, nil
}

// OSNotifier watches path on the machine's filesystem: with inotify on Linux, nil elsewhere.
func OSNotifier(path string) Notifier { return osNotifier(path) }

// Name is the config source annotation value of file pods.
func (f *FileSource) Name() string { return SourceFile }

// Read lists the manifests. A missing path is an empty source, as in Kubernetes, so deleting the
// directory stops its pods; a path that exists but cannot be listed is an error and changes nothing.
func (f *FileSource) Read(ctx context.Context) ([]Manifest, error) {
	docs, err := f.readDocs(ctx)
	if err != nil {
		return nil, err
	}
	return decodeDocs(docs), nil
}

func (f *FileSource) readDocs(context.Context) ([]doc, error) {
	if f.FS == nil {
		return nil, fmt.Errorf("%s: no filesystem", f.Path)
	}
	root := fsPath(f.Path)
	info, err := fs.Stat(f.FS, root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	case info.Mode().IsRegular():
		return []doc{f.readFile(root, f.Path)}, nil
	case !info.IsDir():
		return nil, fmt.Errorf("%s: neither a directory nor a regular file", f.Path)
	}
	entries, err := fs.ReadDir(f.FS, root)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	var out []doc
	for _, e := range entries { // fs.ReadDir sorts by name, which fixes the order of pods and reports
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := path.Join(root, e.Name())
		st, err := fs.Stat(f.FS, p) // follows symbolic links, as Kubernetes' os.Stat does
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // removed while listing
		case err != nil:
			out = append(out, doc{origin: path.Join(f.Path, e.Name()), err: err})
		case st.Mode().IsRegular():
			out = append(out, f.readFile(p, path.Join(f.Path, e.Name())))
		}
	}
	return out, nil
}

func (f *FileSource) readFile(p, origin string) doc {
	data, err := readAtMost(f.FS, p)
	return doc{origin: origin, data: data, err: err}
}

func readAtMost(fsys fs.FS, p string) ([]byte, error) {
	file, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return readLimited(file)
}

func readLimited(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxManifestBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("longer than %d bytes", maxManifestBytes)
	}
	return data, nil
}

// fsPath turns a configured path into an io/fs path: slash-separated, cleaned, without a leading "/".
func fsPath(p string) string {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if p == "" {
		return "."
	}
	return p
}
