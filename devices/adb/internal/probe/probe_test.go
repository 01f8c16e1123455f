package probe

import (
	"errors"
	"testing"

	"github.com/agentoslab/agentlab/devices"
)

func TestInfo(t *testing.T) {
	t.Parallel()
	base := "ro.product.model=Pixel 8\nro.product.name=shiba\nro.product.device=shiba\nro.build.version.sdk=34\n" +
		"ro.product.cpu.abi=arm64-v8a\nro.build.type=user\nro.debuggable=0\nsys.boot_completed=1\n"
	tests := []struct {
		name string
		tail string
		root devices.RootMethod
		ver  string
	}{
		{"magisk su", "su=27.0:MAGISKSU\nmagisk=27.0:MAGISK:R\nuid=2000\n", devices.RootMagisk, "27.0:MAGISKSU"},
		{"kernelsu", "su=v1.0.1:KernelSU\nmagisk=\nuid=2000\n", devices.RootKernelSU, "v1.0.1:KernelSU"},
		{"magisk without shell su grant", "su=\nmagisk=26.4:MAGISK:R\nuid=2000\n", devices.RootMagisk, "26.4:MAGISK:R"},
		{"none", "su=\nmagisk=\nuid=2000\n", devices.RootNone, ""},
		{"adb already root", "su=\nmagisk=\nuid=0\n", devices.RootADB, ""},
		{"other su", "su=1.0 (phh)\nmagisk=\nuid=2000\n", devices.RootNone, ""},
		{"crlf", "su=27.0:MAGISKSU\r\nuid=2000\r\n", devices.RootMagisk, "27.0:MAGISKSU"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Info(base + tt.tail)
			if in.Model != "Pixel 8" || in.APILevel != 34 || in.ABI != "arm64-v8a" || in.Debuggable || in.BuildType != "user" {
				t.Fatalf("props = %+v", in)
			}
			if in.Root != tt.root || in.RootVersion != tt.ver {
				t.Fatalf("root = %q %q, want %q %q", in.Root, in.RootVersion, tt.root, tt.ver)
			}
		})
	}
	if in := Info("ro.debuggable=1\nsu=\n"); in.Root != devices.RootADB {
		t.Fatalf("debuggable build root = %q, want adb-root", in.Root)
	}
}

func TestBattery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want devices.Battery
		err  error
	}{
		{"phone", "Current Battery Service state:\n  AC powered: false\n  USB powered: true\n  status: 2\n  present: true\n  level: 85\n  scale: 100\n", devices.Battery{Present: true, Level: 85, Charging: true}, nil},
		{"unplugged", "  AC powered: false\n  USB powered: false\n  present: true\n  level: 7\n", devices.Battery{Present: true, Level: 7}, nil},
		{"emulator without battery", "  present: false\n  level: 0\n", devices.Battery{}, nil},
		{"no output", "", devices.Battery{}, ErrNoBattery},
		{"present but no level", "  present: true\n", devices.Battery{}, ErrNoBattery},
		{"level out of range", "  present: true\n  level: 250\n", devices.Battery{}, ErrNoBattery},
	}
	for _, tt := range tests {
		got, err := Battery(tt.in)
		if !errors.Is(err, tt.err) || got != tt.want {
			t.Errorf("%s: Battery = %+v, %v; want %+v, %v", tt.name, got, err, tt.want, tt.err)
		}
	}
	if b, err := SysfsBattery("64\n1\n"); err != nil || b != (devices.Battery{Present: true, Level: 64}) {
		t.Errorf("SysfsBattery = %+v, %v", b, err)
	}
	if b, err := SysfsBattery("50\n0\n"); err != nil || b.Present {
		t.Errorf("SysfsBattery(absent) = %+v, %v", b, err)
	}
	if _, err := SysfsBattery(""); !errors.Is(err, ErrNoBattery) {
		t.Errorf("SysfsBattery(empty) = %v", err)
	}
}

func TestDFAvailable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want int64
		err  error
	}{
		{"toybox", "Filesystem     1K-blocks    Used Available Use% Mounted on\n/dev/block/dm-48 115823772 30133540 85559160  27% /data\n", 85559160 * 1024, nil},
		{"coreutils", "Filesystem     1024-blocks      Used Available Capacity Mounted on\n/dev/vda         263174212  12345678 83886080      13% /\n", 83886080 * 1024, nil},
		{"name with space", "Filesystem 1024-blocks Used Available Capacity Mounted on\nmy fs 100 50 50 50% /mnt/x\n", 50 * 1024, nil},
		{"header only", "Filesystem 1K-blocks Used Available Use% Mounted on\n", 0, ErrDF},
		{"error text", "df: /nope: No such file or directory\n", 0, ErrDF},
		{"garbage number", "h\nfs 1 2 x 3% /\n", 0, ErrDF},
	}
	for _, tt := range tests {
		got, err := DFAvailable(tt.in)
		if !errors.Is(err, tt.err) || got != tt.want {
			t.Errorf("%s: DFAvailable = %d, %v; want %d, %v", tt.name, got, err, tt.want, tt.err)
		}
	}
}

func FuzzInfo(f *testing.F) {
	f.Add("ro.build.version.sdk=34\nsu=27.0:MAGISKSU\n")
	f.Add("ro.debuggable=1\nuid=0\n=x\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		in := Info(s)
		switch in.Root {
		case devices.RootMagisk, devices.RootKernelSU, devices.RootADB, devices.RootNone:
		default:
			t.Fatalf("root method %q", in.Root)
		}
	})
}

func FuzzBattery(f *testing.F) {
	f.Add("  present: true\n  level: 85\n")
	f.Add("present: false")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := Battery(s)
		if err == nil && (b.Level < 0 || b.Level > 100 || (!b.Present && b.Level != 0)) {
			t.Fatalf("Battery(%q) = %+v", s, b)
		}
	})
}

func FuzzDFAvailable(f *testing.F) {
	f.Add("Filesystem 1K-blocks Used Available Use% Mounted on\n/dev/x 10 5 5 50% /data\n")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := DFAvailable(s)
		if err == nil && n < 0 {
			t.Fatalf("DFAvailable(%q) = %d", s, n)
		}
	})
}
