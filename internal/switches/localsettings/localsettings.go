// Package localsettings turns Azure Functions on and off on a developer's
// machine by editing the local.settings.json that Azure Functions Core
// Tools reads, the same way the ARM switch edits app settings in Azure:
// through AzureWebJobs.<FunctionName>.Disabled.
//
// Every write goes to a temporary file in the same folder and is renamed
// over the original, so a crash never leaves a half-written file, and
// every setting it does not own is kept. Core Tools reads the file at
// start-up, so a running `func start` must be restarted to notice.
package localsettings

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/fusebox/fusebox/internal/trigger"
)

func settingName(function string) string    { return trigger.Setting(function) }
func altSettingName(function string) string { return trigger.AltSetting(function) }

// Disabled reports whether function is switched off in the file. A missing
// file means nothing is disabled.
func Disabled(path, function string) (bool, error) {
	if err := checkName(function); err != nil {
		return false, err
	}
	_, values, err := read(path)
	if err != nil {
		return false, err
	}
	for _, k := range []string{settingName(function), altSettingName(function)} {
		if v, ok := values[k].(string); ok && trigger.Truthy(v) {
			return true, nil
		}
	}
	return false, nil
}

// SetDisabled switches function off (true) or on (false), keeping every
// other setting. The file is created when missing.
func SetDisabled(path, function string, disabled bool) error {
	return Apply(path, map[string]bool{function: disabled})
}

// Apply switches each function in off as it says, in one write.
func Apply(path string, off map[string]bool) error { return Tune(path, off, nil) }

// Settings returns the file's Values that are strings.
func Settings(path string) (map[string]string, error) {
	_, values, err := read(path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(values))
	for k, v := range values {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out, nil
}

// Tune switches each function in off as it says and sets each setting in
// set (nil: removes it), in one write.
func Tune(path string, off map[string]bool, set map[string]*string) error {
	for function := range off {
		if err := checkName(function); err != nil {
			return err
		}
	}
	doc, values, err := read(path)
	if err != nil {
		return err
	}
	for function, disabled := range off {
		delete(values, altSettingName(function))
		if disabled {
			values[settingName(function)] = "true"
		} else {
			delete(values, settingName(function))
		}
	}
	for k, v := range set {
		if v == nil {
			delete(values, k)
			continue
		}
		values[k] = *v
	}
	raw, err := json.Marshal(values)
	if err != nil {
		return fmt.Errorf("localsettings: %w", err)
	}
	doc["Values"] = raw
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("localsettings: %w", err)
	}
	return writeAtomic(path, append(out, '\n'))
}

func checkName(function string) error {
	if !trigger.ValidName(function) {
		return fmt.Errorf("localsettings: %q is not a function name (%s)", function, trigger.NameRule)
	}
	return nil
}

func read(path string) (map[string]json.RawMessage, map[string]any, error) {
	doc := map[string]json.RawMessage{}
	values := map[string]any{}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		doc["IsEncrypted"] = json.RawMessage("false")
		return doc, values, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("localsettings: %w", err)
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("localsettings: %s is not valid JSON: %w", path, err)
	}
	if raw, ok := doc["Values"]; ok {
		if err := json.Unmarshal(raw, &values); err != nil {
			return nil, nil, fmt.Errorf("localsettings: %s: Values must be an object: %w", path, err)
		}
	}
	return doc, values, nil
}

func writeAtomic(path string, data []byte) error {
	mode := fs.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".local.settings-*.json")
	if err != nil {
		return fmt.Errorf("localsettings: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("localsettings: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("localsettings: sync: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("localsettings: %w", err)
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return fmt.Errorf("localsettings: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("localsettings: replace %s: %w", path, err)
	}
	return nil
}

// DisabledFunctions returns every function the file switches off, in either
// setting form. A missing file switches nothing off.
func DisabledFunctions(path string) (map[string]bool, error) {
	_, values, err := read(path)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for k, v := range values {
		s, ok := v.(string)
		if !ok || !trigger.Truthy(s) {
			continue
		}
		if name, ok := trigger.FunctionOf(k); ok && trigger.ValidName(name) {
			out[name] = true
		}
	}
	return out, nil
}

// HostPort is the port Core Tools listens on for the app: Host.LocalHttpPort
// in the file, 7071 by default.
func HostPort(path string) (int, error) {
	doc, _, err := read(path)
	if err != nil {
		return 0, err
	}
	var host struct{ LocalHttpPort int }
	if raw, ok := doc["Host"]; ok {
		if err := json.Unmarshal(raw, &host); err != nil {
			return 0, fmt.Errorf("localsettings: %s: Host must be an object: %w", path, err)
		}
	}
	if host.LocalHttpPort == 0 {
		return 7071, nil
	}
	return host.LocalHttpPort, nil
}

// Where says which local.settings.json files the local switch may edit.
// The local switch rewrites the file as Fusebox's own user and calls the
// port named in it, so outside development it is kept to one directory.
type Where struct {
	Anywhere bool   // development: any path
	Root     string // otherwise: only files below this directory; empty: none
}

// ErrNotHere is a local.settings.json the local switch may not edit.
var ErrNotHere = errors.New("localsettings: the local switch edits local.settings.json files only in development (FUSEBOX_ENV=development) or below FUSEBOX_LOCAL_SWITCH_ROOT")

// Check resolves path (following links) and says whether the switch may
// edit it, returning the resolved path.
func (w Where) Check(path string) (string, error) {
	if path == "" || !filepath.IsAbs(path) || filepath.Base(path) != "local.settings.json" {
		return "", fmt.Errorf("localsettings: %q must be an absolute path to a local.settings.json", path)
	}
	if w.Anywhere {
		// Resolved where it can be, so that two spellings of one file
		// (a link, a dot) are known as one target.
		if resolved, err := resolve(path); err == nil {
			return resolved, nil
		}
		return filepath.Clean(path), nil
	}
	if w.Root == "" {
		return "", ErrNotHere
	}
	root, err := filepath.EvalSymlinks(w.Root)
	if err != nil {
		return "", fmt.Errorf("localsettings: FUSEBOX_LOCAL_SWITCH_ROOT %s: %w", w.Root, err)
	}
	resolved, err := resolve(path)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(root, resolved)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%w: %s resolves to %s, outside %s", ErrNotHere, path, resolved, root)
	}
	return resolved, nil
}

// resolve follows the links of path's directory and of the file itself;
// the file may not exist yet.
func resolve(path string) (string, error) {
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return "", fmt.Errorf("localsettings: %s: %w", filepath.Dir(path), err)
	}
	resolved := filepath.Join(dir, filepath.Base(path))
	if fi, err := os.Lstat(resolved); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if resolved, err = filepath.EvalSymlinks(resolved); err != nil {
			return "", fmt.Errorf("localsettings: %s: %w", path, err)
		}
	}
	return resolved, nil
}
