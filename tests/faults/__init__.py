"""The fault-injection test kit: an HTTP proxy between dlpipe and the emulators, its rules."""
