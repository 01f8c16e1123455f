package modzip

import (
	"archive/zip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/devices"
)

func writeZip(t *testing.T, files map[string]string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.zip")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, files[n])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

const goodProp = "id=agentos\nname=AgentOS\nversion=v1\nversionCode=7\nauthor=lab\ndescription=runtime\n"

func TestOpen(t *testing.T) {
	t.Parallel()
	p := writeZip(t, map[string]string{
		"module.prop": goodProp, "service.sh": "#!/system/bin/sh\n", "customize.sh": "ui_print hi\n",
		"META-INF/com/google/android/update-binary": "x", "system/bin/agentosd": "ELF",
	})
	m, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Prop != (Prop{ID: "agentos", Name: "AgentOS", Version: "v1", VersionCode: 7, Author: "lab", Description: "runtime"}) {
		t.Fatalf("Prop = %+v", m.Prop)
	}
	var got []string
	for _, f := range m.Files {
		got = append(got, f.Name+":"+f.Mode.String())
	}
	want := "module.prop:-rw-r--r-- service.sh:-rwxr-xr-x system/bin/agentosd:-rw-r--r--"
	if strings.Join(got, " ") != want {
		t.Fatalf("Files = %v, want %s", got, want)
	}
}

func TestParsePropErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"missing id":     "name=x\nversionCode=1\n",
		"bad id":         "id=1abc\nversionCode=1\n",
		"id with slash":  "id=a/b\nversionCode=1\n",
		"no versionCode": "id=abc\n",
		"bad code":       "id=abc\nversionCode=one\n",
		"crlf":           "id=abc\r\nversionCode=1\r\n",
	}
	for name, in := range tests {
		if _, err := ParseProp([]byte(in)); !errors.Is(err, devices.ErrInvalidModule) {
			t.Errorf("%s: err = %v, want ErrInvalidModule", name, err)
		}
	}
	if _, err := Open(writeZip(t, map[string]string{"service.sh": ""})); !errors.Is(err, devices.ErrInvalidModule) {
		t.Errorf("zip without module.prop: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "x.zip")
	os.WriteFile(bad, []byte("not a zip"), 0o644)
	if _, err := Open(bad); !errors.Is(err, devices.ErrInvalidModule) {
		t.Errorf("not a zip: %v", err)
	}
}

func FuzzParseProp(f *testing.F) {
	f.Add([]byte(goodProp))
	f.Add([]byte("id=a\nversionCode=-1\n# c\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProp(b)
		if err != nil {
			if !errors.Is(err, devices.ErrInvalidModule) {
				t.Fatalf("error %v does not wrap ErrInvalidModule", err)
			}
			return
		}
		if !idRE.MatchString(p.ID) || strings.ContainsAny(p.ID, "/\n\r") {
			t.Fatalf("accepted id %q", p.ID)
		}
	})
}
