package safeio

import (
	"path/filepath"
	"sort"
)

// WriteFiles writes files (name → content) into dir, all or none: every
// file goes to a temporary first, and the temporaries are renamed into
// place, in name order, only when every one was written, so a failure
// leaves the old files. committed, if not nil, is called with each file's
// path once it is in place.
func WriteFiles(dir string, files map[string][]byte, committed func(path string)) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	tmp := make([]*File, 0, len(names))
	defer func() {
		for _, f := range tmp {
			f.Abort()
		}
	}()
	for _, n := range names {
		f, err := Create(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		tmp = append(tmp, f)
		if _, err := f.Write(files[n]); err != nil {
			return err
		}
	}
	for _, f := range tmp {
		if err := f.Flush(); err != nil {
			return err
		}
	}
	for _, f := range tmp {
		if err := f.Commit(); err != nil {
			return err
		}
		if committed != nil {
			committed(f.Name())
		}
	}
	return nil
}
