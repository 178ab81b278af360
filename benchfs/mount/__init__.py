"""The FUSE mount of a running cluster: its settings (``settings``), starting it
in the background and unmounting it (``control``), telling a BenchFS mount from
others (``mountinfo``), and the guard that detaches a mount left dead (``guard``).

Nothing is imported here: ``python -m benchfs.mount.guard`` starts with this
package, and the guard must be quick to start (it may outlive the mount).
"""
