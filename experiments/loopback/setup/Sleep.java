// The loopback test's servlet: sleeps ?ms= milliseconds on its request thread (no computing),
// then answers 5 bytes.  The sleep holds the Tomcat thread and, through AJP, the connection.
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;

public class Sleep extends HttpServlet {
    @Override
    protected void doGet(HttpServletRequest request, HttpServletResponse response)
            throws IOException {
        String ms = request.getParameter("ms");
        try {
            Thread.sleep(ms == null ? 0 : Long.parseLong(ms));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        response.setContentType("text/plain");
        response.getWriter().write("done\n");
    }
}
