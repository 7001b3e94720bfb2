fn main() {
    // Links the addon as node expects it (and keeps it loaded on linux, so
    // thread-local destructors never run after an unload).
    napi_build::setup();
}
