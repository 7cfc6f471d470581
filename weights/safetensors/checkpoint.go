package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// IndexName is the usual name of a sharded model's index.
const IndexName = "model.safetensors.index.json"

// maxJSONBytes bounds an index file and config.json.
const maxJSONBytes = 100 << 20

// Checkpoint is a model's weights: one safetensors file, or the shards
// of a folder, with the folder's config.json.
type Checkpoint struct {
	files    []*File
	tensors  []*Tensor
	byName   map[string]*Tensor
	metadata map[string]string
	config   json.RawMessage
}

// Open opens a model's weights. path is a .safetensors file, an index
// (*.safetensors.index.json) or a folder holding either; a config.json
// beside them is read too.
func Open(path string) (*Checkpoint, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	var c *Checkpoint
	dir := filepath.Dir(path)
	switch {
	case fi.IsDir():
		dir = path
		c, err = openFolder(path)
	case strings.HasSuffix(path, ".index.json"):
		c, err = openIndex(dir, path)
	default:
		var f *File
		if f, err = OpenFile(path); err == nil {
			c, err = gather([]*File{f})
		}
	}
	if err != nil {
		return nil, err
	}
	if c.config, err = readConfig(dir); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Tensors returns every tensor: shard after shard (in the order of their
// names), each shard's in the order of their bytes.
func (c *Checkpoint) Tensors() []*Tensor { return c.tensors }

// Tensor returns the tensor of the given name.
func (c *Checkpoint) Tensor(name string) (*Tensor, bool) {
	t, ok := c.byName[name]
	return t, ok
}

// Files returns the files read, one per shard.
func (c *Checkpoint) Files() []*File { return c.files }

// Metadata returns the __metadata__ of the files, merged (the first file
// that sets a key wins). Do not modify it.
func (c *Checkpoint) Metadata() map[string]string { return c.metadata }

// Config returns the folder's config.json, or nil if there is none.
func (c *Checkpoint) Config() json.RawMessage { return c.config }

// Close unmaps every file; the tensors' bytes are nil afterwards.
func (c *Checkpoint) Close() error {
	var first error
	for _, f := range c.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// gather makes a checkpoint of open files, closing them on error.
func gather(files []*File) (*Checkpoint, error) {
	c := &Checkpoint{files: files, byName: map[string]*Tensor{}, metadata: map[string]string{}}
	for _, f := range files {
		for _, t := range f.tensors {
			if other, dup := c.byName[t.Name]; dup {
				c.Close()
				return nil, fmt.Errorf("safetensors: tensor %q is in both %s and %s", t.Name, fileOf(files, other), f.Path)
			}
			c.byName[t.Name] = t
			c.tensors = append(c.tensors, t)
		}
		for k, v := range f.metadata {
			if _, ok := c.metadata[k]; !ok {
				c.metadata[k] = v
			}
		}
	}
	return c, nil
}

func fileOf(files []*File, t *Tensor) string {
	for _, f := range files {
		if f.byName[t.Name] == t {
			return f.Path
		}
	}
	return "?"
}

// openFolder opens the folder's index, or else all its .safetensors files.
func openFolder(dir string) (*Checkpoint, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	var indexes, files []string
	for _, e := range entries {
		switch name := e.Name(); {
		case e.IsDir():
		case strings.HasSuffix(name, ".safetensors.index.json"):
			indexes = append(indexes, name)
		case strings.HasSuffix(name, ".safetensors"):
			files = append(files, name)
		}
	}
	switch {
	case len(indexes) == 1:
		return openIndex(dir, filepath.Join(dir, indexes[0]))
	case len(indexes) > 1:
		for _, name := range indexes {
			if name == IndexName {
				return openIndex(dir, filepath.Join(dir, name))
			}
		}
		return nil, fmt.Errorf("safetensors: %s holds several indexes (%s); open one of them", dir, strings.Join(indexes, ", "))
	case len(files) == 0:
		return nil, fmt.Errorf("safetensors: %s holds no .safetensors file", dir)
	}
	opened := make([]*File, 0, len(files))
	for _, name := range files {
		f, err := OpenFile(filepath.Join(dir, name))
		if err != nil {
			closeAll(opened)
			return nil, err
		}
		opened = append(opened, f)
	}
	return gather(opened)
}

func closeAll(files []*File) {
	for _, f := range files {
		f.Close()
	}
}

// openIndex opens the shards an index names, each once, and checks that
// they hold exactly the tensors it places in them.
func openIndex(dir, path string) (*Checkpoint, error) {
	raw, err := readJSON(path)
	if err != nil {
		return nil, err
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		return nil, fmt.Errorf("safetensors: %s: %v", path, err)
	}
	if index.WeightMap == nil {
		return nil, fmt.Errorf("safetensors: %s has no weight_map", path)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	var shards []string
	seen := map[string]bool{}
	for _, shard := range index.WeightMap {
		if !seen[shard] {
			seen[shard] = true
			shards = append(shards, shard)
		}
	}
	sort.Strings(shards)
	files := make([]*File, 0, len(shards))
	byShard := map[string]*File{}
	for _, shard := range shards {
		p, err := shardPath(dir, realDir, shard)
		if err != nil {
			closeAll(files)
			return nil, fmt.Errorf("safetensors: %s: %w", path, err)
		}
		f, err := OpenFile(p)
		if err != nil {
			closeAll(files)
			return nil, err
		}
		files = append(files, f)
		byShard[shard] = f
	}
	for _, shard := range shards {
		for _, t := range byShard[shard].tensors {
			if want, ok := index.WeightMap[t.Name]; !ok || want != shard {
				closeAll(files)
				if !ok {
					return nil, fmt.Errorf("safetensors: shard %q holds tensor %q, which %s does not list", shard, t.Name, filepath.Base(path))
				}
				return nil, fmt.Errorf("safetensors: shard %q holds tensor %q, which %s places in %q", shard, t.Name, filepath.Base(path), want)
			}
		}
	}
	names := make([]string, 0, len(index.WeightMap))
	for name := range index.WeightMap {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if shard := index.WeightMap[name]; byShard[shard].byName[name] == nil {
			closeAll(files)
			return nil, fmt.Errorf("safetensors: %s places tensor %q in shard %q, which does not hold it", filepath.Base(path), name, shard)
		}
	}
	return gather(files)
}

// shardPath resolves a shard's name inside dir. The name must be a local
// path (not absolute, no ".." leading out), and after following symbolic
// links the file must still lie inside the folder.
func shardPath(dir, realDir, name string) (string, error) {
	if !filepath.IsLocal(name) || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("shard %q is not a path inside the folder", name)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(dir, name))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("shard %q does not exist", name)
		}
		return "", fmt.Errorf("shard %q: %w", name, err)
	}
	rel, err := filepath.Rel(realDir, real)
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("shard %q leads outside the folder (to %s)", name, real)
	}
	return real, nil
}

// readConfig reads dir/config.json, if there is one: a JSON object.
func readConfig(dir string) (json.RawMessage, error) {
	path := filepath.Join(dir, "config.json")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	raw, err := readJSON(path)
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("safetensors: %s is not a JSON object", path)
	}
	return raw, nil
}

// readJSON reads a bounded file of UTF-8 JSON.
func readJSON(path string) (json.RawMessage, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("safetensors: %s is not a regular file", path)
	}
	if fi.Size() > maxJSONBytes {
		return nil, fmt.Errorf("safetensors: %s is %d bytes, over the limit of %d", path, fi.Size(), maxJSONBytes)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if !utf8.Valid(raw) {
		return nil, fmt.Errorf("safetensors: %s is not valid UTF-8", path)
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("safetensors: %s is not valid JSON", path)
	}
	return raw, nil
}
