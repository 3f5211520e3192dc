// The application under test: a Tomcat servlet whose every request does a fixed amount of CPU
// work (SHA-256 over a 4 KiB buffer, ROUNDS times), so its service demand is real CPU time on the
// host and what a planner estimates from the utilisation and response-time laws.
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

public class Work extends HttpServlet {
    private static final int ROUNDS = Integer.getInteger("work.rounds", 1500);

    @Override
    protected void doGet(HttpServletRequest request, HttpServletResponse response)
            throws IOException {
        byte[] buffer = new byte[4096];
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            for (int i = 0; i < ROUNDS; i++) {
                buffer[i % buffer.length] ^= (byte) i;
                byte[] out = digest.digest(buffer);
                buffer[0] ^= out[0];
            }
        } catch (NoSuchAlgorithmException e) {
            throw new IOException(e);
        }
        response.setContentType("text/plain");
        response.getWriter().println("done " + buffer[0]);
    }
}
