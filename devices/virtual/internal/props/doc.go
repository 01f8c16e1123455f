// Package props is the property service of a virtual device: the store
// behind getprop, setprop and resetprop, kept by the device's init and
// reached by device processes over an abstract unix socket whose peer
// credentials decide who may set what. Only persist.* properties survive a
// reboot, in /data/property.
package props
