//! Work nobody is waiting on: summarising a changed or closed file into the project
//! index, and freeing the syntax tree it replaces. It runs on a thread of its own at a
//! lower scheduling priority, so that on a machine with few cores it does not take a
//! core from the parse and lint whose findings the user is waiting for (opening a large
//! script right after another, the second's parse and lint shared two cores with the
//! summary of the first, and waited on it).

use std::panic::AssertUnwindSafe;
use std::sync::OnceLock;

/// How much less the background thread weighs than the others (a nice value: each step
/// is about a tenth less processor time when both want it; it still runs whenever a
/// core is free).
const NICENESS: i32 = 10;

/// Run `job` on the background thread; its result, or `None` if it panicked (the
/// panic is reported on the standard error, and the thread goes on with the next job).
pub async fn run<T: Send + 'static>(job: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (send, receive) = tokio::sync::oneshot::channel();
    thread().spawn(move || {
        if let Ok(result) = std::panic::catch_unwind(AssertUnwindSafe(job)) {
            let _ = send.send(result);
        }
    });
    receive.await.ok()
}

/// One thread, started at the first job: background jobs run in turn.
fn thread() -> &'static rayon::ThreadPool {
    static THREAD: OnceLock<rayon::ThreadPool> = OnceLock::new();
    THREAD.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "oomlint-background".to_string())
            .start_handler(|_| lower_priority())
            .build()
            .expect("the background thread starts")
    })
}

/// On Linux the nice value is per thread: the calling thread's alone is raised.
#[cfg(target_os = "linux")]
fn lower_priority() {
    // SAFETY: setpriority reads its three integer arguments only; on Linux `who = 0`
    // names the calling thread. Failing leaves the priority as it was, which is fine.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, NICENESS);
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_run_on_a_thread_of_lower_priority_and_a_panic_is_not_fatal() {
        let priority = |()| {
            // SAFETY: reads the calling thread's nice value.
            #[cfg(target_os = "linux")]
            let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
            #[cfg(not(target_os = "linux"))]
            let nice = NICENESS;
            (std::thread::current().name().map(str::to_string), nice)
        };
        let (name, nice) = run(move || priority(())).await.unwrap();
        assert_eq!(name.as_deref(), Some("oomlint-background"));
        // (A process already nicer stays as nice: a thread may not raise its priority.)
        assert!(nice >= NICENESS, "nice {nice}");
        assert_eq!(run(|| -> i32 { panic!("a job that fails") }).await, None);
        assert_eq!(run(|| 7).await, Some(7), "the thread goes on after a panic");
    }
}
