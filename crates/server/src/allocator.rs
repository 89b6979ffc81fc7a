//! The global allocator and the two options it runs with. The one module of the workspace that
//! allows `unsafe`: mimalloc's option setter is a C function with no safe wrapper.
#![allow(unsafe_code)]

/// mimalloc instead of glibc's allocator: in the request path's profile glibc's malloc and free
/// took a fifth of the server's CPU. Without transparent huge pages (`no_thp`): with them, every
/// arena mimalloc touched became 2 MiB of resident memory (peak RSS 45 MiB instead of 26 MiB).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's option numbers in its v3 header (`mi_option_e` in `mimalloc.h`); the sys crate
/// names neither constant.
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Freed pages go back to the kernel at once and arenas are committed as they are used, instead
/// of mimalloc's defaults (purge after 1 s, arenas after 10 s; commit whole arenas eagerly): a bulk
/// request's peak RSS fell by about 8 MiB with them and `PATCH`'s rate did not move (see
/// docs/performance.md, "Bulk memory"). An operator's own `MIMALLOC_…` variable still wins.
///
/// Called first thing in `main`, before any other thread exists (mimalloc's setter is not
/// thread-safe).
pub fn return_freed_memory_promptly() {
    for (option, variable, value) in
        [(PURGE_DELAY, "MIMALLOC_PURGE_DELAY", 0), (ARENA_EAGER_COMMIT, "MIMALLOC_ARENA_EAGER_COMMIT", 0)]
    {
        if std::env::var_os(variable).is_none() {
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
        // arena_eager_commit 2), which no neighbouring option has.
        // SAFETY: integer getters and setters; the test owns these two options.
        unsafe {
            assert_eq!(libmimalloc_sys::mi_option_get(PURGE_DELAY), 1_000);
            assert_eq!(libmimalloc_sys::mi_option_get(ARENA_EAGER_COMMIT), 2);
        }
    }
}
