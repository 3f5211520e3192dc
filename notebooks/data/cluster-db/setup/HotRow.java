// The application under test: a Tomcat servlet whose every request holds its request thread
// while it waits outside the database (a remote call, say), then runs one transaction on a
// connection borrowed from the node's DBCP pool (context.xml, jdbc/bank).  Every request on
// every node updates the same row of table hot, so PostgreSQL's row lock on it is one section
// serialised across the whole cluster; it is held from the UPDATE until the COMMIT has flushed
// its WAL record (synchronous_commit = on).
//
//   -Dapp.outside.ms   the wait before borrowing a connection, holding only the
//                      request thread                                   (default 30 ms)
//   -Dapp.underlock.s  pg_sleep() run after the UPDATE, under the row lock (default 0.004 s)
//
// Per request, in order:
//   1. Thread.sleep(app.outside.ms)                          thread only
//   2. borrow a connection (DBCP; waits when maxTotal are out) thread, then connection
//   3. SELECT balance FROM account WHERE id = ?              transaction, outside the lock
//   4. UPDATE hot SET ... WHERE id = 1                       takes the row lock (waits for it)
//   5. INSERT INTO ledger ...; SELECT pg_sleep(?)            under the lock
//   6. COMMIT (WAL flush)                                    under the lock until it returns
//   7. return the connection, write the answer               thread only
//
// The request attributes db.borrow.us, db.update.us and db.commit.us (microseconds) go to
// Tomcat's access log (server.xml): the wait for a pooled connection, the UPDATE statement
// (mostly the wait for the row lock when it is contended) and the COMMIT.
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.concurrent.ThreadLocalRandom;
import javax.naming.InitialContext;
import javax.naming.NamingException;
import javax.sql.DataSource;

public class HotRow extends HttpServlet {
    private static final long OUTSIDE_MS = Long.getLong("app.outside.ms", 30);
    private static final double UNDER_LOCK_S =
            Double.parseDouble(System.getProperty("app.underlock.s", "0.004"));
    // schema.sql fills account with this many rows
    private static final int ACCOUNTS = 10000;
    private DataSource bank;

    @Override
    public void init() throws ServletException {
        try {
            bank = (DataSource) new InitialContext().lookup("java:comp/env/jdbc/bank");
        } catch (NamingException e) {
            throw new ServletException(e);
        }
    }

    @Override
    protected void doGet(HttpServletRequest request, HttpServletResponse response)
            throws IOException, ServletException {
        int account = ThreadLocalRandom.current().nextInt(1, ACCOUNTS + 1);
        long balance;
        long borrowNs, updateNs, commitNs;
        try {
            Thread.sleep(OUTSIDE_MS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ServletException(e);
        }
        long asked = System.nanoTime();
        try (Connection c = bank.getConnection()) {
            borrowNs = System.nanoTime() - asked;
            c.setAutoCommit(false);
            try {
                try (PreparedStatement read =
                        c.prepareStatement("SELECT balance FROM account WHERE id = ?")) {
                    read.setInt(1, account);
                    try (ResultSet rs = read.executeQuery()) {
                        rs.next();
                        balance = rs.getLong(1);
                    }
                }
                long updating = System.nanoTime();
                try (PreparedStatement hot = c.prepareStatement(
                        "UPDATE hot SET counter = counter + 1, updated_at = now() WHERE id = 1")) {
                    if (hot.executeUpdate() != 1) {
                        throw new ServletException("table hot has no row with id 1");
                    }
                }
                updateNs = System.nanoTime() - updating;
                try (PreparedStatement ledger = c.prepareStatement(
                        "INSERT INTO ledger (account_id, amount) VALUES (?, ?)")) {
                    ledger.setInt(1, account);
                    ledger.setLong(2, 1);
                    ledger.executeUpdate();
                }
                try (PreparedStatement work = c.prepareStatement("SELECT pg_sleep(?)")) {
                    work.setDouble(1, UNDER_LOCK_S);
                    work.executeQuery().close();
                }
                long committing = System.nanoTime();
                c.commit();
                commitNs = System.nanoTime() - committing;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            }
        } catch (SQLException e) {
            throw new ServletException(e);
        }
        request.setAttribute("db.borrow.us", borrowNs / 1000);
        request.setAttribute("db.update.us", updateNs / 1000);
        request.setAttribute("db.commit.us", commitNs / 1000);
        response.setContentType("text/plain");
        response.getWriter().println(balance);
    }
}
