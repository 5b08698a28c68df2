//! A server the suite starts before a run of its load and stops after it: on a port chosen
//! free, in a process group of its own, ready once a TCP connection succeeds, stopped by
//! SIGTERM and, if it is still there after [`GRACE`], SIGKILL. While it runs its group is
//! named to the signal handler, which kills it should spinlab be interrupted
//! (`app::set_server_group`).

use super::suite::{Ready, Server};
use crate::app::{preload_env, set_server_group};
use crate::select::LockChoice;
use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to accept a connection.
pub const READY_WITHIN: Duration = Duration::from_secs(10);

/// How long a server has to exit after SIGTERM.
pub const GRACE: Duration = Duration::from_secs(2);

/// A loopback port no socket holds now: bound as port 0 (the kernel picks one) and released.
/// Another process could take it before the server binds it; the server then fails to start
/// and the run says so.
pub fn free_port() -> std::io::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}

/// A started server.
pub struct Running {
    child: Child,
}

impl Running {
    /// Its process id (and its group's).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Starts `args` (the server's expanded command line) under `lock` through `preload`,
    /// its stderr into `stderr`, and waits until it is ready.
    pub fn start(
        server: &Server,
        args: &[String],
        port: Option<u16>,
        lock: Option<&LockChoice>,
        preload: &Path,
        stderr: &Path,
    ) -> Result<Running, String> {
        let log = File::create(stderr).map_err(|e| format!("creating {}: {e}", stderr.display()))?;
        let mut cmd = Command::new(&args[0]);
        cmd.args(&args[1..]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(log).process_group(0);
        preload_env(&mut cmd, lock, preload);
        let child = cmd.spawn().map_err(|e| format!("cannot start the server `{}`: {e}", args[0]))?;
        set_server_group(child.id() as libc::pid_t);
        let mut running = Running { child };
        if let Err(why) = running.wait_ready(server.ready, port) {
            let _ = running.stop();
            let said = std::fs::read_to_string(stderr).ok().and_then(|t| t.lines().next().map(str::to_string));
            return Err(match said {
                Some(line) => format!("{why}; it said: {line}"),
                None => why,
            });
        }
        Ok(running)
    }

    fn wait_ready(&mut self, ready: Ready, port: Option<u16>) -> Result<(), String> {
        let port = match (ready, port) {
            (Ready::Started, _) => return Ok(()),
            (Ready::Connects, Some(port)) => port,
            (Ready::Connects, None) => return Err("the server waits for a connection but has no port".to_string()),
        };
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let started = Instant::now();
        loop {
            if self.exited() {
                return Err("the server exited before it was ready".to_string());
            }
            if TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if started.elapsed() > READY_WITHIN {
                return Err(format!("the server accepted no connection on port {port} within {READY_WITHIN:?}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether it has exited, leaving it unreaped (`WNOWAIT`): until it is reaped its pid, and
    /// so its group's id, cannot be reused, so the group can still be killed safely.
    fn exited(&self) -> bool {
        // SAFETY: siginfo_t is plain data; zeroes are a valid value for it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: the pid is our own child, not reaped yet; `info` is a live local.
        let r = unsafe {
            libc::waitid(libc::P_PID, self.child.id(), &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT)
        };
        // SAFETY: waitid filled `info` (or left it zeroed: no child has changed state).
        r == 0 && unsafe { info.si_pid() } != 0
    }

    /// Stops it: SIGTERM to its group, then SIGKILL after [`GRACE`]; reaps it. Says how, if
    /// it had exited before it was told to (a server that crashed under a lock).
    pub fn stop(mut self) -> Option<String> {
        let exited_early = self.exited();
        let group = self.child.id() as libc::pid_t;
        if !exited_early {
            // SAFETY: kill has no memory effects; the child is unreaped, so its pid still
            // names its group.
            unsafe { libc::kill(-group, libc::SIGTERM) };
            let deadline = Instant::now() + GRACE;
            while Instant::now() < deadline && !self.exited() {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        // SAFETY: as above: whatever the server started goes with it.
        unsafe { libc::kill(-group, libc::SIGKILL) };
        let status = self.child.wait();
        set_server_group(0);
        match status {
            Ok(status) if exited_early => Some(format!("the server exited during the load ({status})")),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_port_can_be_bound_again() {
        let port = free_port().unwrap();
        assert_ne!(port, 0);
        TcpListener::bind((Ipv4Addr::LOCALHOST, port)).expect("the chosen port was free");
    }

    #[test]
    fn a_server_that_accepts_no_connection_is_stopped_and_says_why() {
        let server = Server { command: &[], ready: Ready::Connects };
        let port = free_port().unwrap();
        let stderr = std::env::temp_dir().join(format!("spinlab-server-test-{}.stderr", std::process::id()));
        let args = ["sh", "-c", "echo listening nowhere >&2; exec sleep 1"].map(String::from);
        let started = Instant::now();
        let err = Running::start(&server, &args, Some(port), None, Path::new("/nonexistent"), &stderr)
            .err()
            .expect("a server that never listens is not ready");
        assert!(err.contains("exited before it was ready") && err.contains("listening nowhere"), "{err}");
        assert!(started.elapsed() < READY_WITHIN);
        let _ = std::fs::remove_file(&stderr);
    }
}
