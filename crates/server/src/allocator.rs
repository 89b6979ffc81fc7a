//! The global allocator and the two options it runs with. The one module of the workspace that
//! allows `unsafe`: mimalloc's option setter is a C function with no safe wrapper.
#![allow(unsafe_code)]

/// mimalloc instead of glibc's allocator: in the request path's profile glibc's malloc and free
/// took a fifth of the server's CPU. Built with `no_thp`, which keeps mimalloc from asking for
/// transparent huge pages (`madvise`): on a host whose THP mode is `madvise`, as the bench's, every
/// arena mimalloc touched had become 2 MiB of resident memory (peak RSS 45 MiB instead of 26 MiB).
/// A host in mode `always` gives huge pages unasked; `MIMALLOC_ALLOW_THP=0` in the environment
/// turns them off there (docs/operations.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's option numbers in its v3 header (`mi_option_e` in `mimalloc.h`); the sys crate
/// names neither constant.
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Each option the server sets, the names mimalloc reads it from the environment by (its current
/// and its legacy name, after `MIMALLOC_`), and the server's value.
const OPTIONS: [(libmimalloc_sys::mi_option_t, [&str; 2], std::ffi::c_long); 2] = [
    (PURGE_DELAY, ["PURGE_DELAY", "RESET_DELAY"], 0),
    (ARENA_EAGER_COMMIT, ["ARENA_EAGER_COMMIT", "EAGER_REGION_COMMIT"], 0),
];

/// Freed pages go back to the kernel at once and arenas are committed as they are used, instead
/// of mimalloc's defaults (purge 1 s after a free, arenas likewise; commit whole arenas eagerly):
/// a bulk request's peak RSS fell by 7–12 MiB and `PATCH`'s rate did not move (docs/performance.md,
/// "Freed memory returned at once"). An operator's own variable for an option, by either of its
/// names and in any case as mimalloc reads them, wins.
///
/// Called first thing in `main`, before any other thread exists (mimalloc's setter is not
/// thread-safe).
pub fn return_freed_memory_promptly() {
    let given: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.to_str().map(str::to_ascii_uppercase))
        .filter_map(|name| name.strip_prefix("MIMALLOC_").map(str::to_owned))
        .collect();
    for (option, names, value) in OPTIONS {
        if !names.iter().any(|name| given.iter().any(|given| given == name)) {
            // SAFETY: a plain integer setter, called while `main` is the only thread.
            unsafe { libmimalloc_sys::mi_option_set(option, value) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_numbers_are_the_ones_mimalloc_reads() {
        // Each number reads its option's documented default (purge_delay 1,000 ms,
        // arena_eager_commit 2), which no neighbouring option has. The test process never calls
        // `return_freed_memory_promptly`, so only a MIMALLOC_ variable could change them: then
        // the defaults are not what this test can see, and it says so instead of passing.
        let set: Vec<String> = std::env::vars().map(|(name, _)| name).filter(|n| n.starts_with("MIMALLOC_")).collect();
        assert!(set.is_empty(), "run this test without {set:?}");
        // SAFETY: integer getters.
        unsafe {
            assert_eq!(libmimalloc_sys::mi_option_get(PURGE_DELAY), 1_000);
            assert_eq!(libmimalloc_sys::mi_option_get(ARENA_EAGER_COMMIT), 2);
        }
    }
}
