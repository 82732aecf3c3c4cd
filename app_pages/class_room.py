"""Class: a teacher starts a class and asks from any view; every student answers here; the lab reveals the model's
answer beside the class's."""

from ui import class_room, class_student, class_views, openings, state

openings.show("class_room")
place = class_room.checked_place()
if place.teacher:
    class_views.teacher_header(place.code, place.teacher_key)
    class_views.teacher_panel(place.code, place.teacher_key)
    class_views.lessons(place.code, place.teacher_key)
    class_views.ask_choice(place.code, place.teacher_key)
    class_views.history(place.code, place.teacher_key)
elif place.student:
    class_student.student_panel(place.code, place.student_key)
else:
    class_views.start_or_join()
state.follow_open_page()  # a lesson's button: its view opens, and the class is asked once it has drawn
