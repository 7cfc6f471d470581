package onnx

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// external returns the bytes of a tensor stored outside the model file
// (data_location EXTERNAL). The data file must lie inside the model's
// folder, also after following symbolic links; each file is mapped once.
func (im *importer) external(what string, tp *onnxpb.TensorProto, size int64) ([]byte, error) {
	var (
		location          string
		offset, length    int64
		hasLoc, hasLength bool
	)
	for _, kv := range tp.GetExternalData() {
		var err error
		switch kv.GetKey() {
		case "location":
			location, hasLoc = kv.GetValue(), true
		case "offset":
			offset, err = parseExternalInt(kv.GetValue())
		case "length":
			length, err = parseExternalInt(kv.GetValue())
			hasLength = true
		}
		if err != nil {
			return nil, fmt.Errorf("%s: external data %s: %w", what, kv.GetKey(), err)
		}
	}
	if !hasLoc || location == "" {
		return nil, fmt.Errorf("%s: external data has no location", what)
	}
	f, err := im.externalFile(location)
	if err != nil {
		return nil, fmt.Errorf("%s: external data %q: %w", what, location, err)
	}
	fileSize := f.Size()
	if offset > fileSize {
		return nil, fmt.Errorf("%s: external data offset %d is past the end of %q (%d bytes)", what, offset, location, fileSize)
	}
	if !hasLength {
		length = fileSize - offset
	}
	if length > fileSize-offset {
		return nil, fmt.Errorf("%s: external data [%d, %d+%d) runs past the end of %q (%d bytes)", what, offset, offset, length, location, fileSize)
	}
	if length != size {
		return nil, fmt.Errorf("%s: external data holds %d bytes, but its type and shape need %d", what, length, size)
	}
	end := offset + length
	return f.Bytes()[offset:end:end], nil
}

func parseExternalInt(s string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not an integer: %q", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("negative value %d", v)
	}
	return v, nil
}

// externalFile maps the data file at location, relative to the model's
// folder, or returns the mapping made for an earlier tensor.
func (im *importer) externalFile(location string) (*device.MappedFile, error) {
	if im.dir == "" {
		return nil, fmt.Errorf("the model was not loaded from a folder, so external data cannot be found")
	}
	loc := filepath.FromSlash(location)
	if filepath.IsAbs(loc) || strings.HasPrefix(location, "/") || strings.HasPrefix(location, `\`) {
		return nil, fmt.Errorf("absolute paths are not allowed; external data must lie in the model's folder")
	}
	if !filepath.IsLocal(loc) {
		return nil, fmt.Errorf("the path leaves the model's folder")
	}
	if im.realDir == "" {
		d, err := filepath.EvalSymlinks(im.dir)
		if err != nil {
			return nil, err
		}
		if d, err = filepath.Abs(d); err != nil {
			return nil, err
		}
		im.realDir = d
	}
	real, err := filepath.EvalSymlinks(filepath.Join(im.dir, loc))
	if err != nil {
		return nil, err
	}
	if real, err = filepath.Abs(real); err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(im.realDir, real)
	if err != nil || !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("the path leaves the model's folder (it resolves to %s)", real)
	}
	return im.data.open(real)
}

// dataFiles are the external data files of an import, or those that the
// imports of one Parsed share: each is mapped once, by the first import
// that reads it, and stays mapped until its owner (the Model, or the
// Parsed) is closed. A model with open shapes is imported again for
// every set of shapes; sharing the mappings keeps its weights at one
// address, so that what is made of them (a device copy, a packed layout)
// is made once.
type dataFiles struct {
	mu     sync.Mutex
	byPath map[string]*device.MappedFile
	list   []*device.MappedFile // in mapping order
	closed bool
}

// open returns the mapping of the file at the resolved path real,
// mapping it the first time.
func (d *dataFiles) open(real string) (*device.MappedFile, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errors.New("the model is closed")
	}
	if f, ok := d.byPath[real]; ok {
		return f, nil
	}
	f, err := device.MapFile(real)
	if err != nil {
		return nil, err
	}
	if d.byPath == nil {
		d.byPath = make(map[string]*device.MappedFile)
	}
	d.byPath[real] = f
	d.list = append(d.list, f)
	return f, nil
}

// each calls fn on every file mapped so far, in order, until fn returns
// true; it reports whether one did. It does not allocate.
func (d *dataFiles) each(fn func(*device.MappedFile) bool) bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, f := range d.list {
		if fn(f) {
			return true
		}
	}
	return false
}

// close unmaps every file; later opens fail.
func (d *dataFiles) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var first error
	for _, f := range d.list {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	d.list, d.byPath, d.closed = nil, nil, true
	return first
}
