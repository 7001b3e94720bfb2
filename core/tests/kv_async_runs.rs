//! The async `tx` and `once.run` (`store.aio().tx`, `once.aio().run`):
//! the same promises as their blocking forms, with every wait a future.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::task::{Context, Wake, Waker};
use std::thread::{self, Thread};

use pollster::block_on;
use tinystore::{Error, ErrorKind, Store};

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    (dir, store)
}

/// Wakes the thread that polls.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `fut` on this thread until `until` holds, and says whether it
/// answered by then (it must not).
fn poll_until<F: Future>(fut: std::pin::Pin<&mut F>, until: impl Fn() -> bool) -> bool {
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = fut;
    loop {
        if fut.as_mut().poll(&mut cx).is_ready() {
            return true;
        }
        if until() {
            return false;
        }
        thread::park();
    }
}

#[test]
fn kv11_an_async_run_runs_its_work_once_and_keeps_the_answer() {
    let (_d, store) = store();
    let charges = store.once::<String>("charges").open().unwrap();
    let ran = block_on(charges.aio().run("order-1", || async { Ok("receipt-1".to_string()) })).unwrap();
    assert_eq!(ran, "receipt-1");
    let again = block_on(charges.aio().run("order-1", || async {
        panic!("a kept answer must not run the work again")
    }))
    .unwrap();
    assert_eq!(again, "receipt-1");
    assert_eq!(charges.get("order-1").unwrap().as_deref(), Some("receipt-1"));
}

#[test]
fn kv11_an_async_run_waits_for_a_run_elsewhere_and_gets_its_answer() {
    let (_d, store) = store();
    let charges = store.once::<i64>("charges").open().unwrap();
    let (started_tx, started) = mpsc::channel();
    let (finish, finish_rx) = mpsc::channel::<()>();
    let owner = {
        let charges = charges.clone();
        thread::spawn(move || {
            charges.run("order-1", || {
                started_tx.send(()).unwrap();
                finish_rx.recv().unwrap();
                Ok(41)
            })
        })
    };
    started.recv().unwrap();
    let ran_here = AtomicBool::new(false);
    let mut waiter = pin!(charges.aio().run("order-1", || async {
        ran_here.store(true, Ordering::SeqCst);
        Ok(0)
    }));
    // The key is claimed by the owner's run: the waiter cannot answer yet.
    assert!(
        !poll_until(waiter.as_mut(), || true),
        "a waiter answered while the key was claimed"
    );
    finish.send(()).unwrap();
    assert_eq!(owner.join().unwrap().unwrap(), 41);
    assert_eq!(block_on(waiter).unwrap(), 41, "the waiter gets the owner's answer");
    assert!(
        !ran_here.load(Ordering::SeqCst),
        "the waiter's work ran beside the owner's"
    );
}

#[test]
fn kv11_an_async_run_that_fails_or_is_dropped_keeps_nothing() {
    let (_d, store) = store();
    let charges = store.once::<i64>("charges").open().unwrap();
    let e = block_on(charges.aio().run("order-1", || async {
        Err::<i64, _>(Error::new(ErrorKind::Invalid, "card declined"))
    }))
    .unwrap_err();
    assert!(e.to_string().contains("card declined"), "{e}");
    assert_eq!(charges.get("order-1").unwrap(), None);

    let started = AtomicBool::new(false);
    {
        let mut run = pin!(charges.aio().run("order-2", || async {
            started.store(true, Ordering::SeqCst);
            std::future::pending::<tinystore::Result<i64>>().await
        }));
        assert!(!poll_until(run.as_mut(), || started.load(Ordering::SeqCst)));
    } // dropped while its work is under way: the claim is let go
    assert_eq!(block_on(charges.aio().run("order-2", || async { Ok(2) })).unwrap(), 2);
    assert_eq!(
        charges.run("order-1", || Ok(1)).unwrap(),
        1,
        "a failed run keeps nothing"
    );
}

#[test]
fn kv11_a_run_of_the_same_key_inside_async_work_is_refused() {
    let (_d, store) = store();
    let charges = store.once::<i64>("charges").open().unwrap();
    let answer = block_on(charges.aio().run("order-1", || async {
        let blocking = charges.run("order-1", || Ok(2)).unwrap_err();
        assert_eq!(blocking.kind(), ErrorKind::Invalid, "{blocking}");
        let nested = charges.aio().run("order-1", || async { Ok(3) }).await.unwrap_err();
        assert_eq!(nested.kind(), ErrorKind::Invalid, "{nested}");
        assert_eq!(nested.to_string(), blocking.to_string(), "one rule, one message");
        Ok(1)
    }))
    .unwrap();
    assert_eq!(answer, 1);
}

#[test]
fn kv16_an_async_tx_writes_all_or_nothing() {
    let (_d, store) = store();
    let stock = store.bucket::<i64>("stock").open().unwrap();
    let orders = store.bucket::<String>("orders").open().unwrap();
    let sold = store.counters("sold").open().unwrap();
    stock.set("apples", &3).unwrap();
    block_on(store.aio().tx(|tx| {
        let left = tx.with(&stock).get("apples")?.unwrap_or(0);
        tx.with(&stock).set("apples", &(left - 1))?;
        tx.with(&orders).set("o-1", &"apples".to_string())?;
        tx.counters(&sold)?.add("apples", 1)?;
        Ok(())
    }))
    .unwrap();
    assert_eq!(stock.get("apples").unwrap(), Some(2));
    assert_eq!(orders.get("o-1").unwrap().as_deref(), Some("apples"));
    assert_eq!(sold.get("apples").unwrap(), 1);

    let e = block_on(store.aio().tx(|tx| {
        tx.with(&stock).set("apples", &0)?;
        tx.with(&orders).set("o-2", &"apples".to_string())?;
        Err::<(), _>(Error::new(ErrorKind::Invalid, "out of stock"))
    }))
    .unwrap_err();
    assert!(e.to_string().contains("out of stock"), "{e}");
    assert_eq!(stock.get("apples").unwrap(), Some(2), "a failed tx wrote nothing");
    assert_eq!(orders.get("o-2").unwrap(), None);
}

#[test]
fn kv16_a_panic_in_an_async_tx_rolls_back_and_goes_on_to_the_caller() {
    let (_d, store) = store();
    let stock = store.bucket::<i64>("stock").open().unwrap();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        block_on(store.aio().tx(|tx| {
            tx.with(&stock).set("apples", &1)?;
            panic!("handler bug");
            #[allow(unreachable_code)]
            Ok(())
        }))
    }));
    let payload = panicked.unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"handler bug"));
    assert_eq!(stock.get("apples").unwrap(), None, "the panicked tx wrote nothing");
    stock.set("pears", &2).unwrap();
    assert_eq!(stock.get("pears").unwrap(), Some(2), "the store goes on writing");
}

#[test]
fn kv16_a_write_through_an_outside_handle_inside_an_async_tx_is_refused() {
    let (_d, store) = store();
    let stock = store.bucket::<i64>("stock").open().unwrap();
    let e = block_on(store.aio().tx(|_tx| stock.set("apples", &1))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
    let blocking = store.tx(|_tx| stock.set("apples", &1)).unwrap_err();
    assert_eq!(e.to_string(), blocking.to_string(), "one rule, one message");
    assert_eq!(stock.get("apples").unwrap(), None);
    let nested = block_on(store.aio().tx(|_tx| store.tx(|_| Ok(())))).unwrap_err();
    assert_eq!(nested.kind(), ErrorKind::Invalid, "{nested}");
}

/// A server spawns these futures on a multi-threaded runtime, which needs
/// them `Send`.
#[test]
fn the_async_tx_and_run_can_move_between_threads() {
    fn is_send<T: Send>(_: &T) {}
    let (_d, store) = store();
    let charges = store.once::<i64>("charges").open().unwrap();
    let run = charges.aio().run("order-1", || async { Ok(1) });
    is_send(&run);
    let tx = store.aio().tx(|_tx| Ok(()));
    is_send(&tx);
    let answered = thread::scope(|s| s.spawn(|| block_on(async { (run.await, tx.await) })).join().unwrap());
    assert_eq!(answered.0.unwrap(), 1);
    answered.1.unwrap();
}
