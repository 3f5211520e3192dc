// The application under test: a Tomcat servlet whose every request holds its request thread while
// it waits, first on its own (a remote call, say), then holding one permit of a small fair pool
// (a JDBC-like connection pool: java.util.concurrent.Semaphore with fairness, so waiters are
// served first come, first served).  It computes almost nothing: the request's time is waiting.
//
//   -Dpool.outside.ms  the wait before asking for a permit        (default 35 ms)
//   -Dpool.inside.ms   the wait while holding the permit          (default 20 ms)
//   -Dpool.permits     the pool's size                            (default 3)
//
// The time spent queueing for a permit goes into the request attribute pool.wait.us (in
// microseconds), which Tomcat's access log records (server.xml).
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.concurrent.Semaphore;

public class Pool extends HttpServlet {
    private static final long OUTSIDE_MS = Long.getLong("pool.outside.ms", 35);
    private static final long INSIDE_MS = Long.getLong("pool.inside.ms", 20);
    private static final int PERMITS = Integer.getInteger("pool.permits", 3);
    private static final Semaphore POOL = new Semaphore(PERMITS, true);

    @Override
    protected void doGet(HttpServletRequest request, HttpServletResponse response)
            throws IOException, ServletException {
        long waitedNs;
        try {
            Thread.sleep(OUTSIDE_MS);
            long asked = System.nanoTime();
            POOL.acquire();
            waitedNs = System.nanoTime() - asked;
            try {
                Thread.sleep(INSIDE_MS);
            } finally {
                POOL.release();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ServletException(e);
        }
        request.setAttribute("pool.wait.us", waitedNs / 1000);
        response.setContentType("text/plain");
        response.getWriter().println("done");
    }
}
