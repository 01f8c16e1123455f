// Package tools is the multi-call binary inside a virtual device: the
// executable bound to /system/bin/vdevtool answers, by the name it was
// run as, getprop, setprop, resetprop, reboot, su, magisk and ksud, plus
// vdevtool's own helpers for tests.
package tools
