package safeio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// This file holds the one check a command that writes files makes before
// any work (CheckPaths): each output can be written, and none of them is
// one of the command's inputs (a model, the GGUF file an IR's meta
// weights names) or another output. The comparison is by file (device
// and inode, os.SameFile), so a symlink, a hard link or a path through ".."
// is caught as well as the same spelling.

// Path is one path a command reads or writes and the flag (or role) that
// names it in messages.
type Path struct {
	Flag string // "-o", "--report", "MODEL", "meta weights of x.ir"
	Path string
	// Dir marks an output directory (created when missing); Names are the
	// file names, as filepath.Match patterns, the command writes into it.
	Dir   bool
	Names []string
}

// Outputs returns the outputs among outs whose path is set ("" and "-"
// mean stdout).
func Outputs(outs ...Path) []Path {
	var o []Path
	for _, p := range outs {
		if p.Path != "" && p.Path != "-" {
			o = append(o, p)
		}
	}
	return o
}

// CheckPaths checks, before any work, that every output can be written
// (its directory exists and takes a new file, it is not a directory, a
// device opens for writing) and that no output is one of the inputs or
// another output. The error names the flags and paths at fault.
func CheckPaths(inputs, outputs []Path) error {
	for _, o := range outputs {
		if err := checkWritable(o); err != nil {
			return err
		}
	}
	// Inputs as files: only regular files can be overwritten by a rename
	// (a device or FIFO read as input is left alone).
	type inFile struct {
		arg Path
		st  fs.FileInfo
	}
	var ins []inFile
	for _, in := range inputs {
		if in.Path == "" {
			continue
		}
		if st, err := os.Stat(in.Path); err == nil && st.Mode().IsRegular() {
			ins = append(ins, inFile{in, st})
		}
	}
	// The files each output will replace that exist now.
	type outFile struct {
		arg  Path
		path string
		st   fs.FileInfo
	}
	var outs []outFile
	for _, o := range outputs {
		if !o.Dir {
			if st, err := os.Stat(o.Path); err == nil {
				outs = append(outs, outFile{o, o.Path, st})
			}
			continue
		}
		for _, pat := range o.Names {
			matches, _ := filepath.Glob(filepath.Join(o.Path, pat))
			for _, m := range matches {
				if st, err := os.Stat(m); err == nil {
					outs = append(outs, outFile{o, m, st})
				}
			}
		}
	}
	for _, o := range outs {
		for _, in := range ins {
			if os.SameFile(o.st, in.st) {
				where := o.arg.Path
				if o.arg.Dir {
					where = fmt.Sprintf("%s (in %s)", o.path, o.arg.Path)
				}
				return fmt.Errorf("%s %s is the same file as %s %s: writing it would destroy an input; choose another path",
					o.arg.Flag, where, in.arg.Flag, in.arg.Path)
			}
		}
	}
	// Two outputs naming one file: the second would overwrite the first.
	for i, a := range outputs {
		for _, b := range outputs[i+1:] {
			if a.Dir || b.Dir {
				if d, f := a, b; a.Dir != b.Dir {
					if f.Dir {
						d, f = b, a
					}
					if sameDir(filepath.Dir(f.Path), d.Path) && matchesAny(filepath.Base(f.Path), d.Names) {
						return fmt.Errorf("%s %s is a file %s %s writes: give them different paths", f.Flag, f.Path, d.Flag, d.Path)
					}
				}
				continue
			}
			if samePath(a.Path, b.Path) {
				return fmt.Errorf("%s %s and %s %s name the same file: give them different paths", a.Flag, a.Path, b.Flag, b.Path)
			}
		}
	}
	return nil
}

// checkWritable checks one output: a file (written as a temporary file in
// its directory, renamed into place) or a directory.
func checkWritable(o Path) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s %s: %s", o.Flag, o.Path, fmt.Sprintf(format, args...))
	}
	st, err := os.Stat(o.Path)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return bad("%v", errText(err))
	case o.Dir && err == nil:
		if !st.IsDir() {
			return bad("exists and is not a directory")
		}
		return probeDir(o, o.Path)
	case o.Dir:
		// Created with its parents: the nearest existing ancestor must
		// take a new directory.
		dir := filepath.Dir(filepath.Clean(o.Path))
		for {
			dst, err := os.Stat(dir)
			if err == nil {
				if !dst.IsDir() {
					return bad("%s is not a directory", dir)
				}
				return probeDir(o, dir)
			}
			if !errors.Is(err, fs.ErrNotExist) || dir == filepath.Dir(dir) {
				return bad("%v", errText(err))
			}
			dir = filepath.Dir(dir)
		}
	case err == nil && st.IsDir():
		return bad("is a directory")
	case err == nil && !st.Mode().IsRegular():
		// A device or FIFO is written in place (safeio); a character
		// device must open for writing (a FIFO would block here).
		if st.Mode()&fs.ModeCharDevice != 0 {
			f, err := os.OpenFile(o.Path, os.O_WRONLY, 0)
			if err != nil {
				return bad("cannot be opened for writing: %v", errText(err))
			}
			f.Close()
		}
		return nil
	}
	dir := filepath.Dir(o.Path)
	dst, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return bad("directory %s does not exist", dir)
	case err != nil:
		return bad("directory %s: %v", dir, errText(err))
	case !dst.IsDir():
		return bad("%s is not a directory", dir)
	}
	return probeDir(o, dir)
}

// probeDir checks that dir takes a new file by creating and removing one
// (permissions, a read-only mount and virtual file systems such as /proc
// and /sys all show here, where a stat alone does not).
func probeDir(o Path, dir string) error {
	f, err := os.CreateTemp(dir, ".irtool-check-*")
	if err != nil {
		why := errText(err)
		if errors.Is(err, fs.ErrNotExist) {
			// The directory is there: its file system takes no new
			// files (/proc answers ENOENT).
			why = "its file system takes no new files"
		}
		return fmt.Errorf("%s %s: cannot create a file in directory %s (%s)", o.Flag, o.Path, dir, why)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// errText is an error without the path a *fs.PathError repeats.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// samePath reports whether two output paths name one file: the same
// cleaned absolute path, or (when both exist) the same file.
func samePath(a, b string) bool {
	if aa, err := filepath.Abs(a); err == nil {
		if bb, err := filepath.Abs(b); err == nil && aa == bb {
			return true
		}
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// sameDir is samePath for directories.
func sameDir(a, b string) bool { return samePath(a, b) }

func matchesAny(name string, pats []string) bool {
	for _, p := range pats {
		if ok, _ := filepath.Match(p, name); ok {
			return true
		}
	}
	return false
}
